"""WhatsApp Cloud API: the webhook's payload and signature, the Graph API client, the outbox.

The webhook view and the service that turns a delivery into stored messages and queued turns
live in copilot/webhook.py (they reach the turn service, which reaches the outbox here)."""

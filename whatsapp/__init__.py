"""The WhatsApp channel: customers write to the organisation's number and the copilot answers.

The webhook (`webhook.py`) stores each message and queues its turn through the turn service like
every other entry point; `channel.py` is all the turn knows of WhatsApp (registration, the
customer's own records, documents, the outbox). Payload and signature `payload.py`, Graph API
client `graph.py`, outbox `outbox.py`, media `media.py`, customers `customers.py`, human mode
`humans.py`."""

"""The proactive agent: maintenance due, follow-ups and seasonal campaigns."""

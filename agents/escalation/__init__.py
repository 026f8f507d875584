"""The escalation agent: complaints, emergencies and hand-offs to a person, as tickets."""

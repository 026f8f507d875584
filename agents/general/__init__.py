"""The general agent: greetings, opening hours, contact details and general prices."""

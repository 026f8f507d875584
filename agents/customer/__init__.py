"""The customer agent: finds, registers and updates customers; validates CUITs."""

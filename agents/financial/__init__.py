"""The financial agent: quotes, invoices, what customers owe, and the price list."""

"""The scheduling agent: books, moves and cancels jobs, finds free slots and technicians."""

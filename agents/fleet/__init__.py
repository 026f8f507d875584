"""The fleet agent: vehicles, technician absences, redistribution and dispatch."""

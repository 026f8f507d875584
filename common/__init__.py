"""The bottom floor: parts every other package may share (README, "Floors").

It imports no other project package. `common.text` is plain Python (the NLU imports it, and the
NLU imports nothing from Django); the other modules may use Django and Channels.
"""

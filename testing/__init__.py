"""Test doubles that tests/ and bench/ share: servers that stand in for the outside world over
real sockets. No production package imports this one (`make lint`: the test-servers contract).
"""

"""The ground floor: column types, the domain algebra, its wire codec, the one error hierarchy,
cross-type reconciliation, the session's text rules and the collapse policy.

Imports nothing else of the project (a test guards it), so every package builds on it and
importing it costs no Spark, no SQL parser and no session.
"""

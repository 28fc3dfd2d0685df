"""``DppSession.join`` and whether a DataFrame gives the same rows when run again."""

"""SQL text: parsed with sqlglot, translated into the typed plan, pruned relations written
back into the query (the road for sessions without the hook)."""

"""The front ends: each turns what a user runs into the shared analysis's typed plan and the
runtime's loads.

* :mod:`dpp.frontends.hook` — Spark's optimized plan, through the JVM rule (classic sessions
  and ``dpp connect-server``);
* :mod:`dpp.frontends.sql` — SQL text, for a session that cannot load the hook;
* :mod:`dpp.frontends.connect` — a Spark Connect client's DataFrame plans;
* :mod:`dpp.frontends.dataframe` — ``DppSession.join`` and DataFrame determinism.

A front end imports :mod:`dpp.core`, :mod:`dpp.analysis` and :mod:`dpp.runtime`, and no other
front end but one arrow ``tests/test_layers.py`` names: the DataFrame front end reads a
Connect DataFrame's plan with the Connect front end's reader.
"""

"""What runs a decision: settings (:mod:`~dpp.runtime.config`), tables and their catalogs
(:mod:`~dpp.runtime.catalog`, :mod:`~dpp.runtime.remote_catalog`, :mod:`~dpp.runtime.views`),
which loads to make (:mod:`~dpp.runtime.decision`), build sides and their filters
(:mod:`~dpp.runtime.filter_runs`), pruned relations handed back to Spark
(:mod:`~dpp.runtime.handoff`, :mod:`~dpp.runtime.connect_handoff`,
:mod:`~dpp.runtime.fact_loads`), the hook's jar (:mod:`~dpp.runtime.jvm_build`), Spark's
own metrics (:mod:`~dpp.runtime.spark_metrics`) and the job reports
(:mod:`~dpp.runtime.report`). The services one session holds are
:class:`dpp.runtime.services.Runtime`.

Imports :mod:`dpp.core` and :mod:`dpp.analysis`; never a front end or the public API (what it
needs of a session is the protocol :class:`dpp.runtime.session_parts.SessionParts`).
"""

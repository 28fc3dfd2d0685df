"""dpp's start-up hook, first on ``PYTHONPATH`` under ``dpp-submit`` / ``dpp run``.

Runs the ``sitecustomize`` this one hides (the next on ``sys.path``), then, with
``DPP_AUTOENABLE=1``, waits for ``pyspark.sql.session`` to be imported (it imports nothing of
pyspark or dpp itself) and wraps ``SparkSession.Builder.getOrCreate`` so every session the
job gets is passed to ``dpp.autoenable.on_session``. See :mod:`dpp.autoenable`.
"""
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
_TARGET = "pyspark.sql.session"


def _chain():
    """The sitecustomize this one hides, run as Python would have run it."""
    for entry in sys.path:
        if os.path.abspath(entry or os.getcwd()) == _HERE:
            continue
        try:
            spec = importlib.machinery.PathFinder.find_spec("sitecustomize", [entry])
        except Exception:
            continue
        if spec is None or spec.loader is None or spec.origin == __file__:
            continue
        module = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(module)
        except Exception as exc:  # as site.py does: report, go on
            print(f"Error in sitecustomize ({spec.origin}); set PYTHONVERBOSE for traceback:\n"
                  f"{type(exc).__name__}: {exc}", file=sys.stderr)
        return


def _add_conf(builder):
    """``dpp run --conf KEY=VALUE`` (``DPP_CONF``, a JSON object): each setting the job's own
    builder does not set, as ``spark-submit --conf`` would be under the job's ``.config``."""
    raw = os.environ.get("DPP_CONF")
    if not raw:
        return
    try:
        import json

        settings = json.loads(raw)
        options = getattr(builder, "_options", {})
        for key, value in settings.items():
            if key not in options:
                builder.config(key, value)
    except Exception as exc:
        print(f"dpp: DPP_CONF not applied ({type(exc).__name__}: {exc})", file=sys.stderr)


def _patch(module):
    cls = getattr(getattr(module, "SparkSession", None), "Builder", None)
    original = getattr(cls, "getOrCreate", None)
    if original is None or getattr(original, "_dpp_autoenable", False):
        return

    def getOrCreate(self):
        _add_conf(self)
        spark = original(self)
        try:
            from dpp.autoenable import on_session
        except ImportError as exc:  # a Python without dpp runs the job: it runs as it is
            print(f"dpp: not enabled, this Python ({sys.executable}) cannot import dpp: "
                  f"{exc}", file=sys.stderr)
            return spark
        on_session(spark)
        return spark

    getOrCreate._dpp_autoenable = True
    getOrCreate.__doc__ = original.__doc__
    getOrCreate.__wrapped__ = original
    cls.getOrCreate = getOrCreate


class _Loader(importlib.abc.Loader):
    def __init__(self, loader):
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        _patch(module)

    def __getattr__(self, name):
        return getattr(self._loader, name)


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name != _TARGET:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _Loader(spec.loader)
                return spec
        return None


_chain()
if os.environ.get("DPP_AUTOENABLE") == "1":
    if _TARGET in sys.modules:
        _patch(sys.modules[_TARGET])
    elif not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())

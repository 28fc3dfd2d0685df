"""What the optimizer hook's JVM part calls: ``apply(json) -> json``, over py4j's callback
server (a ``java.util.function.Function`` proxy, so py4j needs no class of ours).

A message longer than one py4j write arrives in parts (``DppHook.send`` on the JVM side):
py4j writes a callback through an 8 KiB buffered writer on a socket with Nagle's algorithm
on, so a longer plan description leaves the JVM as two writes and the second one waits for
Python's delayed ACK, about 40 ms on Linux (py4j issue 516), on every optimizer run of a
query whose plan passes 8 KiB. Parts that each fit one write cost a loopback round trip each.
"""
from __future__ import annotations

import json
import logging
import threading
from collections import OrderedDict
from typing import Any, Optional, Protocol

from dpp.analysis.plan_wire import WIRE_VERSION, WireError, check

__all__ = ["Bridge", "Hook", "Parts", "PART", "LAST"]

log = logging.getLogger(__name__)

# how the parts of one longer message start (DppHook.PART / DppHook.LAST): "<mark><id> <text>"
_MARK = "\x01"
PART = _MARK + "part "
LAST = _MARK + "last "
_KEPT = 64   # messages in assembly: a JVM call abandoned midway (its bounded wait) leaves one


class Parts:
    """The parts of longer messages, joined once their last part arrives. Messages of
    several optimizing threads interleave; each has its own id."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: OrderedDict[str, list[str]] = OrderedDict()
        self.joined = 0   # messages that came in parts (what tests check the JVM cut)

    def add(self, message: str) -> str | None:
        """The whole message once ``message`` is its last part, else None."""
        last = message.startswith(LAST)
        if not last and not message.startswith(PART):
            raise ValueError(f"not a part of a message: {message[:20]!r}")
        ident, _, text = message[len(PART if not last else LAST):].partition(" ")
        with self._lock:
            parts = self._open.pop(ident, [])
            parts.append(text)
            if last:
                self.joined += 1
                return "".join(parts)
            self._open[ident] = parts
            while len(self._open) > _KEPT:
                gone, _ = self._open.popitem(last=False)
                log.debug("dpp: an unfinished bridge message %s dropped", gone)
            return None

    def __len__(self) -> int:
        with self._lock:
            return len(self._open)


class Hook(Protocol):
    """What the bridge calls of the hook it serves: :class:`~dpp.frontends.hook.optimizer_hook.OptimizerHook`
    implements it. Declared here, not imported from there, so the import arrow points one
    way: the hook makes its bridge, the bridge knows only these four calls."""

    def on_plan(self, msg: dict[str, Any]) -> dict[str, Any]: ...

    def on_list(self, token: str, call_site: Optional[str] = None,
                spark_keys: Optional[dict[str, Any]] = None) -> dict[str, Any]: ...

    def on_end(self, scope: str) -> None: ...

    def on_refused(self, tokens: list[str], reason: str) -> None: ...


class Bridge:
    """The JVM's way into one :class:`~dpp.frontends.hook.optimizer_hook.OptimizerHook`: the rule's plans,
    the file indexes' listings and the ends of executed queries."""

    def __init__(self, hook: Hook) -> None:
        self.hook = hook
        self.parts = Parts()

    def apply(self, message: str) -> str:
        try:
            if message.startswith(_MARK):
                whole = self.parts.add(message)
                if whole is None:
                    return ""
                message = whole
            msg = json.loads(message)
            op = msg.get("op") if isinstance(msg, dict) else None
            if op == "plan":   # checked by the hook, which reports a plan it cannot read
                return json.dumps(self._answer(msg))
            if op in ("list", "end", "refused"):
                check(op, msg, f"{op} message")
            if op == "list":
                return json.dumps(self.hook.on_list(msg["token"], msg.get("callSite"),
                                                    msg.get("sparkKeys")))
            if op == "end":
                self.hook.on_end(msg["scope"])
                return json.dumps({"status": "ok"})
            if op == "refused":
                self.hook.on_refused(msg["tokens"], msg["reason"])
                return json.dumps({"status": "ok"})
            return json.dumps({"status": "none", "version": WIRE_VERSION,
                               "reason": f"unknown op {op!r}"})
        except Exception as exc:  # the JVM side then keeps Spark's own plan / listing
            log.warning("dpp: optimizer hook failed on a %s call: %s", message[:40], exc,
                        exc_info=True)
            return json.dumps({"status": "none", "version": WIRE_VERSION, "wrap": {},
                               "reason": str(exc)[:300]})

    def _answer(self, msg: dict[str, Any]) -> dict[str, Any]:
        """The hook's answer to a plan, checked before it is sent: one off the contract is
        never sent (the rule would refuse it); the relations it named are reported unpruned,
        saying why, and Spark's plan runs."""
        answer = self.hook.on_plan(msg)
        try:
            check("planAnswer", answer, "plan answer")
        except WireError as exc:
            log.warning("dpp: %s", exc)
            wrap = answer.get("wrap") if isinstance(answer, dict) else None
            tokens = [t for t in (wrap.values() if isinstance(wrap, dict) else [])
                      if isinstance(t, str)]
            self.hook.on_refused(tokens, str(exc))
            return {"wrap": {}}
        return answer

    class Java:
        implements = ["java.util.function.Function"]

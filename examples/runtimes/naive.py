#!/usr/bin/env python3
"""A naive agent runtime, as many are written: it keeps a ledger and checkpoints, but keys each
call by a hash of its arguments and retries every timeout, writes included, as a generic retry
policy does. It claims the seed's guards all the same: `twice-sim replay --runtime` must catch
it, and name the tapes it fails.

    twice-sim replay --runtime 'python3 examples/runtimes/naive.py' levels/
"""

import hashlib
import json
import sqlite3

from twice_protocol import Billing, Twice

# What its author believes it does (the seed's rules); two of them it does not.
GUARDS = ["write_retry_rule", "pause_on_indeterminate", "ledger", "atomic_reservation", "key_downstream",
          "checkpoint_version", "reconcile_hook", "key_per_call", "no_lease_expiry", "no_reflex_compensation",
          "refusal_is_failed"]
MARKS = ["load checkpoint", "reserve", "record outcome", "save checkpoint", "exit"]
ATTEMPTS = 3  # for every tool: "three attempts with backoff is a good default"


def main():
    twice = Twice()
    hello = twice.hello
    run = hello["run"]
    billing = Billing(hello["billing"], hello["http_timeout_ms"], hello["tools"])
    db = sqlite3.connect(hello["ledger"], timeout=10, isolation_level=None)
    db.executescript("""
        CREATE TABLE IF NOT EXISTS calls (key TEXT PRIMARY KEY, status TEXT, result TEXT);
        CREATE TABLE IF NOT EXISTS checkpoints (run TEXT PRIMARY KEY, state TEXT);""")
    twice.answer_hello("naive.py 1.0 (Python, SQLite)", GUARDS, MARKS)

    twice.mark("load checkpoint")
    row = db.execute("SELECT state FROM checkpoints WHERE run = ?", (run,)).fetchone()
    transcript = json.loads(row[0]) if row else []

    def save():
        twice.mark("save checkpoint")
        db.execute("INSERT OR REPLACE INTO checkpoints VALUES (?, ?)", (run, json.dumps(transcript)))

    while True:
        decision = twice.ask_model(transcript)
        if decision["decision"] != "call":
            save()
            return twice.mark("exit", status="completed" if decision["decision"] == "done" else "failed")
        call = decision["call"]
        # The bug: the key is the arguments' hash, so two honest calls with the same arguments
        # are one, and a reworded replay is another.
        digest = hashlib.sha256((call["tool"] + json.dumps(call["arguments"], sort_keys=True)).encode())
        key = "h-" + digest.hexdigest()[:24]
        twice.mark("reserve", call=call["id"], key=key)
        done = db.execute("SELECT result FROM calls WHERE key = ? AND status = 'completed'", (key,)).fetchone()
        if done:
            transcript.append({"call": call["id"], "told": "result", "content": done[0]})
            save()
            continue
        db.execute("INSERT OR REPLACE INTO calls VALUES (?, 'started', NULL)", (key,))
        # The other bug: every timeout is retried, whatever the tool does to the world.
        for attempt in range(1, ATTEMPTS + 1):
            twice.mark("send", call=call["id"], key=key, attempt=attempt)
            kind, answer = billing.run(call, key)
            if kind != "unknown":
                break
        status = "completed" if kind == "result" else "failed"
        twice.mark("record outcome", call=call["id"], key=key, status=status)
        db.execute("UPDATE calls SET status = ?, result = ? WHERE key = ?", (status, answer, key))
        told = "result" if kind == "result" else "failed"
        transcript.append({"call": call["id"], "told": told, "content": answer or "timed out"})
        save()


if __name__ == "__main__":
    main()

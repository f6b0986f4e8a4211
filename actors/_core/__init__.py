"""The actor core: what every actor has, and nothing above it.

Cells (an actor's state), envelopes and addresses, mailboxes (``ActorRef``)
and inboxes, replies, monitors and exit reasons, timers and the timekeeper
that keeps every deadline, tracing, errors. Its modules import nothing of
``actors`` outside this package (``tests/test_layout.py``); the system,
supervision, pools, the registry and the sequencer are built on it.
"""

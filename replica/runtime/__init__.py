"""The replica at run time, on Trio and the actor framework: workers (the
command loop beside the step-or-park dataflow loop, and reconciliation with
the barrier), processes (the multiplexing client, channel adapters, merging
of the runtimes' responses), connections and the command channel, the
replica's wiring, faults, and the invariants the runtimes must keep
(docs/architecture.md)."""

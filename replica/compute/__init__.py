"""A worker's compute state: the commands it applies, the dataflows it
renders and steps, the reads it answers, the frontiers it reports
(``_state``); reconciliation over whole dataflows (``_reconcile``); and the
peers through which the interactive runtime reads what maintenance
publishes (``_peers``). Plain synchronous code, no Trio (docs/protocol.md)."""

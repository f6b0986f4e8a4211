"""The independent judge: a plain reference model of what a spec's stanzas
must print (``_model``), its one from-scratch evaluator of plans over row
multisets (``_evaluate``), and random programs whose expected blocks it
writes (``_programs``).

It imports the replica's model and protocol and the driver's language, never
the engine it judges.
"""

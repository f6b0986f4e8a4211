"""The real test driver's language, read before anything runs: spec files and
their stanzas (``_spec``; the files a command names, ``_inputs``), directive
lines (``_headers``), typed rows and how they print (``_data``), a
``create-dataflow`` body (``_dataflow_body``) and its plans (``_plan_syntax``,
``_plan_operators``, ``_plan_resolution``, over the tokens of ``_tokens`` and
the expressions of ``_expressions``), and each stanza's payload
(``_payloads``), resolved from what the file declared above it
(``_catalog``; configuration rows, ``_settings``); ``explain``'s text of a
lowered plan (``_explain``); and input escaped for the terminal
(``_escape``). See
README.md, The ``trio-reconcile`` command.

It imports the replica's model and protocol, nothing else of the project.
"""

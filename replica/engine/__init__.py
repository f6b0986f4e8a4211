"""The dataflow engine, at one worker: operators (a module a family:
``_sources``, ``_linear``, ``_exchange``, ``_reduce``, ``_join``,
``_union``, ``_top_k``, ``_sinks``, on what ``_stream`` says every operator
shares), arrangements (index parts, shared by readers, never copied),
rendering a description into operators (``_render``), and what a rendered
dataflow exports (``_exports``). Plain synchronous code, no Trio: it imports
the model and the shards only (``tests/test_layout.py``)."""

"""Scripts in the real driver's language written for this project (not
copies of Materialize's), each combining constructs the real scripts do not,
on all five topologies: what the real driver accepts runs here and prints
what the real replica would."""

from __future__ import annotations

import pytest

from replica.driver.lang._spec import SpecError, parse_spec
from replica.driver.run._runner import run_spec

from ..scripts import TOPOLOGIES, assert_passes

START = """\
create-instance
----
ok

define-schema name=one
  k bigint
----
ok

initialization-complete
----
ok

write-rows shard=r ts=0
  1 a
  1 b
  2 c
----
wrote 3

"""

TWO_COUNTS = (
    START
    + """\
# Two aggregates make two columns, however alike they are.
create-dataflow name=counts as-of=0
  import source=1000 shard=r upper=1
  build id=2000
    Reduce group_by=[#0] aggregates=[count(*), COUNT( * )] monotonic exp_group_size=4
      Get u1000
  export index=2001 on=2000 key=[2]
----
ok

schedule id=2001
----
ok

peek id=2001 ts=0
----
1 2 2
2 1 1

peek-count id=2001 ts=0 literals=[1]
----
1
"""
)

CROSS_JOIN = (
    START
    + """\
write-rows shard=s ts=0
  7 x
  8 y
----
wrote 2

# CrossJoin: every pair, counted per key of the left side.
create-dataflow name=pairs as-of=0 optimize
  import source=1000 shard=r upper=1
  import source=1001 shard=s upper=1
  build id=2000
    Reduce group_by=[#0] aggregates=[count(*)]
      Project (#0, #2)
        CrossJoin
          Get u1000
          Get u1001
  export index=2001 on=2000 key=[0]
----
ok

schedule id=2001
----
ok

peek id=2001 ts=0
----
1 4
2 2
"""
)

DISTINCT = (
    START
    + """\
# Distinct, and its Reduce spelling with no aggregates; a later retraction
# keeps a key while another row holds it.
create-dataflow name=keys as-of=0
  import source=1000 shard=r upper=2
  build id=2000
    Distinct project=[#0]
      Get u1000
  build id=2002
    Reduce group_by=[#0] aggregates=[]
      Get u1000
  export index=2001 on=2000 key=[0]
  export kind=subscribe sink=2003 on=2002 schema=one up-to=3
----
ok

schedule id=2001
----
ok

peek id=2001 ts=0
----
1
2

await-subscribe id=2003 up-to=1
----
0 1 1
0 1 2

write-rows shard=r ts=1
  3 d
  1 e
----
wrote 2

peek id=2001 ts=1
----
1
2
3

await-subscribe id=2003 up-to=2
----
1 1 3
"""
)

SCRIPTS = {"two_counts": TWO_COUNTS, "cross_join": CROSS_JOIN, "distinct": DISTINCT}


@pytest.mark.parametrize("topology", sorted(TOPOLOGIES))
@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_a_new_script_in_the_real_language_passes(name: str, topology: str) -> None:
    spec = parse_spec(SCRIPTS[name], f"{name}.spec")
    assert_passes(spec, topology)


def test_create_instance_takes_the_real_drivers_instance_options() -> None:
    text = (
        "create-instance expiration-offset=1h arrangement-dictionary-compression=true\n"
        "enable_column_paged_batcher bool true\n----\nok\n"
    )
    (stanza,) = parse_spec(text, "x.spec").stanzas
    assert stanza.args == {
        "expiration-offset": "1h",
        "arrangement-dictionary-compression": "true",
    }
    run = run_spec(parse_spec(text, "x.spec"), TOPOLOGIES["two-w1"], seed=1, trace=None)
    assert [outcome.actual for outcome in run.outcomes] == [("ok",)]


def test_arrangement_dictionary_compression_is_a_rust_bool() -> None:
    with pytest.raises(SpecError, match=r"^x.spec:1: create-instance: bad value 'yes' for "):
        parse_spec("create-instance arrangement-dictionary-compression=yes\n----\nok\n", "x.spec")

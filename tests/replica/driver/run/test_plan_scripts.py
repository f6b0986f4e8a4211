"""Scripts for the plan language's wider reach, written for this project, on
all five topologies: free spacing between a plan line's tokens, a join's
equality within one input, ``Filter`` and ``Map``, and the aggregates other
than ``count(*)``. Each runs against the replica and the reference model."""

from __future__ import annotations

import pytest

from replica.driver.lang._spec import parse_spec

from ..scripts import TOPOLOGIES, assert_passes
from .test_scripts_of_our_own import START

LOOSE_SPACING = (
    START
    + """\
write-rows shard=s ts=0
  1 x
  2 y
----
wrote 2

# Tokens may be spaced as freely as Rust's tokenizer allows.
create-dataflow name=loose as-of=0 optimize
  import source=1000 shard=r upper=1
  import source=1001 shard=s upper=1
  build id=2000
    Join on = ( #0 = # 2 )
      Get u1000
      Project(#0,#1)
        Get u1001
  build id=2002
    Reduce group_by = [ #0 ] aggregates = [ count ( * ) , ]  monotonic  exp_group_size = 2
      Get u1000
  export index=2001 on=2000 key=[0]
  export index=2003 on=2002 key=[0]
----
ok

schedule id=2001
----
ok

peek id=2001 ts=0
----
1 "a" 1 "x"
1 "b" 1 "x"
2 "c" 2 "y"

peek id=2003 ts=0
----
1 2
2 1
"""
)

KV = """\
create-instance
----
ok

define-schema name=kv
  k bigint
  v bigint nullable
  b boolean nullable
----
ok

initialization-complete
----
ok

write-rows shard=t ts=0 schema=kv
  1 1 true
  2 3 false
  3 null null
  4 4 true
----
wrote 4

"""

FILTERS = (
    KV
    + """\
# An equality of two columns of one join input filters that input.
create-dataflow name=filters as-of=0 optimize
  import source=1000 shard=t upper=2 schema=kv
  build id=2000
    Join on=(#0 = #1 AND #0 = #3)
      Get u1000
      Get u1000
  build id=2002
    Filter #1 > 1 AND #2 IS NOT NULL
      Get u1000
  build id=2004
    Filter (#1 = #0) OR #2
      Get u1000
  build id=2006
    Map (#1 IS NULL, 7, "z", null::bigint, #2 = false)
      Project (#0, #1)
        Get u1000
  export index=2001 on=2000 key=[0]
  export index=2003 on=2002 key=[0]
  export index=2005 on=2004 key=[0]
  export index=2007 on=2006 key=[0]
----
ok

schedule id=2001
----
ok

peek id=2001 ts=0
----
1 1 true 1 1 true
4 4 true 4 4 true

peek id=2003 ts=0
----
2 3 false
4 4 true

peek id=2005 ts=0
----
1 1 true
4 4 true

peek id=2007 ts=0
----
1 1 false 7 "z" null true
2 3 false 7 "z" null true
3 null true 7 "z" null false
4 4 false 7 "z" null true

write-rows shard=t ts=1 schema=kv
  5 5 null
  6 2 true
----
wrote 2

peek id=2001 ts=1
----
1 1 true 1 1 true
4 4 true 4 4 true
5 5 null 5 5 null

peek id=2003 ts=1
----
2 3 false
4 4 true
6 2 true

peek id=2005 ts=1
----
1 1 true
4 4 true
5 5 null
6 2 true
"""
)

AGGREGATES = (
    """\
create-instance
----
ok

define-schema name=g
  g bigint
  v bigint nullable
  b boolean nullable
----
ok

initialization-complete
----
ok

write-rows shard=t ts=0 schema=g
  1 5 true
  1 3 false
  1 5 null
  2 null null
  2 null true
  3 7 false
----
wrote 6

write-rows shard=u ts=0
  1 a
  2 b
  2 c
  2 d
----
wrote 4

# Every aggregate at once: nulls are skipped, a group of nulls gives null
# (0 for a count), and distinct counts each value once.
create-dataflow name=aggregates as-of=0
  import source=1000 shard=t upper=2 schema=g
  import source=1001 shard=u upper=2
  build id=2000
"""
    + "    Reduce group_by=[#0] aggregates=[sum(#1), MIN(#1), max(#1), count(#1), "
    + "count(distinct #1), sum(distinct #1), any(#2), all(#2), count(*)]\n"
    + """\
      Get u1000
  build id=2002
    Reduce group_by=[#0] aggregates=[count(*)]
      Get u1001
  build id=2004
    Reduce aggregates=[min(#1), max(#1), sum(#1), count(distinct #1)]
      Get u2002
  export index=2001 on=2000 key=[0]
  export index=2005 on=2004 key=[]
----
ok

schedule id=2001
----
ok

peek id=2001 ts=0
----
1 13 3 5 3 2 8 true false 3
2 null null null 0 0 null true null 2
3 7 7 7 1 1 7 false false 1

peek id=2005 ts=0
----
1 3 4 2

# The counts change: the old ones are retracted, the least with them.
write-rows shard=u ts=1
  1 e
  1 f
  1 g
----
wrote 3

write-rows shard=t ts=1 schema=g
  2 4 false
----
wrote 1

peek id=2005 ts=1
----
3 4 7 2

peek id=2001 ts=1
----
1 13 3 5 3 2 8 true false 3
2 4 4 4 1 1 4 true false 3
3 7 7 7 1 1 7 false false 1
"""
)

SCRIPTS = {"loose_spacing": LOOSE_SPACING, "filters": FILTERS, "aggregates": AGGREGATES}


@pytest.mark.parametrize("topology", sorted(TOPOLOGIES))
@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_a_plan_script_runs_as_the_real_driver_would(name: str, topology: str) -> None:
    spec = parse_spec(SCRIPTS[name], f"{name}.spec")
    assert_passes(spec, topology)

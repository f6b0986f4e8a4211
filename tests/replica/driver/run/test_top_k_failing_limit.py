"""A TopK whose limit fails for a group: the failure is that group's error
while the group holds a row, and goes when it empties (as a from-scratch
evaluation has it). It stayed for ever, and grew each time the group moved."""

from __future__ import annotations

import pytest

from replica.driver.lang._spec import parse_spec

from ..scripts import TOPOLOGIES, assert_passes

FAILING_LIMIT = """\
create-instance
----
ok

initialization-complete
----
ok

define-schema name=kv
  k bigint
  v bigint nullable
----
ok

write-rows shard=a ts=0 schema=kv
  1 10
  2 0
----
wrote 2

advance shard=b upper=1
----
ok

create-dataflow name=d as-of=0
  import source=400 shard=a schema=kv upper=1
  import source=401 shard=b schema=kv upper=1
  build id=410
    TopK group_by=[#0] order_by=[#1] limit=(1 / (#0 + -2)) + 2
      Union
        Get u400
        Negate
          Get u401
  export index=411 on=410 key=[0]
----
ok

schedule id=411
----
ok

peek id=411 ts=0 schema=kv
----
error: peek error: Evaluation error: division by zero

write-rows shard=a ts=1 schema=kv
  2 5
----
wrote 1

advance shard=b upper=2
----
ok

peek id=411 ts=1 schema=kv
----
error: peek error: Evaluation error: division by zero

write-rows shard=b ts=2 schema=kv
  2 0
  2 5
----
wrote 2

advance shard=a upper=3
----
ok

peek id=411 ts=2 schema=kv
----
1 10

peek id=411 ts=1 schema=kv
----
error: peek error: Evaluation error: division by zero
"""


@pytest.mark.parametrize("topology", sorted(TOPOLOGIES))
def test_a_groups_failing_limit_is_its_error_until_it_empties(topology: str) -> None:
    assert_passes(parse_spec(FAILING_LIMIT, "hostile.spec"), topology)

"""Plans that differ only where Python's equality does not look: a
reconnect must rebuild a dataflow replayed with such a plan, not keep the
old one (it kept a ``Map (-0.0)`` for a ``Map (0.0)``, and read ``-0``)."""

from __future__ import annotations

import pytest

from replica.driver.lang._spec import parse_spec
from replica.model import Constant, Literal

from ..scripts import TOPOLOGIES, assert_passes

MAP_ZERO = """\
create-instance
----
ok

initialization-complete
----
ok

write-rows shard=r ts=0
  1 a
----
wrote 1

create-dataflow name=m as-of=0
  import source=100 shard=r upper=1
  build id=110
    Map (-0.0)
      Get u100
  export index=111 on=110 key=[0]
----
ok

schedule id=111
----
ok

peek id=111 ts=0
----
1 "a" -0

reconnect
----
ok

create-instance
----
ok

create-dataflow name=m as-of=0
  import source=100 shard=r upper=1
  build id=110
    Map (0.0)
      Get u100
  export index=111 on=110 key=[0]
----
ok

schedule id=111
----
ok

initialization-complete
----
ok

peek id=111 ts=0
----
1 "a" 0
"""

CONSTANT_ZERO = """\
create-instance
----
ok

initialization-complete
----
ok

write-rows shard=r ts=0
  1 a
----
wrote 1

create-dataflow name=m as-of=0
  import source=100 shard=r upper=1
  build id=110
    Constant // { types: "(bigint, text, double precision)" }
      - (1, "a", -0.0)
  export index=111 on=110 key=[0]
----
ok

schedule id=111
----
ok

peek id=111 ts=0
----
1 "a" -0

reconnect
----
ok

create-instance
----
ok

create-dataflow name=m as-of=0
  import source=100 shard=r upper=1
  build id=110
    Constant // { types: "(bigint, text, double precision)" }
      - (1, "a", 0.0)
  export index=111 on=110 key=[0]
----
ok

schedule id=111
----
ok

initialization-complete
----
ok

peek id=111 ts=0
----
1 "a" 0
"""


def test_a_negative_zero_is_another_literal_and_another_constant_row() -> None:
    assert Literal(-0.0) != Literal(0.0)
    assert Literal(0.0) == Literal(0.0)
    assert hash(Literal(1.5)) == hash(Literal(1.5))
    assert Constant((((-0.0,), 1),), 1) != Constant((((0.0,), 1),), 1)
    assert Constant((((1, "a", 0.5), 2),), 3) == Constant((((1, "a", 0.5), 2),), 3)
    assert hash(Constant((((1, 0.5), 2),), 2)) == hash(Constant((((1, 0.5), 2),), 2))


@pytest.mark.parametrize("spec", [MAP_ZERO, CONSTANT_ZERO], ids=["map", "constant"])
@pytest.mark.parametrize("topology", sorted(TOPOLOGIES))
def test_a_reconnect_rebuilds_a_plan_whose_zero_changed_sign(spec: str, topology: str) -> None:
    assert_passes(parse_spec(spec, "hostile.spec"), topology)

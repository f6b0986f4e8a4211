"""SPEC_FORMAT.md's "Errors that scripts match exactly": scripts written by
others against that page expect these lines byte for byte, on every
topology. (DRIVER_COMPAT.md only says ``peek error: <the replica's
message>`` and leaves a ``count``'s timeout open, so these stand.)"""

from __future__ import annotations

import pytest

from replica.driver.lang._spec import parse_spec

from ..scripts import TOPOLOGIES, assert_passes

SCRIPT = """\
create-instance
----
ok

initialization-complete
----
ok

write-rows shard=s ts=0
  1 a
  2 b
----
wrote 2

write-rows shard=s ts=0
  3 c
----
error: write at ts 0 is below the shard upper 1

advance shard=s upper=0
----
error: upper 0 is below the shard upper 1

define-index source=1000 index=1001 shard=s key=[0] as-of=0
----
ok

schedule id=1001
----
ok

advance shard=s upper=5
----
ok

await-frontier id=1001 ts=5
----
ok

allow-compaction id=1001 frontier=3
----
ok

peek id=1001 ts=1
----
error: peek error: read at ts 1 is before the compaction frontier 3

count id=1001 ts=2
----
error: peek error: read at ts 2 is before the compaction frontier 3

peek id=1001 ts=9 timeout-secs=7
----
error: timed out after 7s

count id=1001 ts=9 timeout-secs=8
----
error: timed out after 8s

await-frontier id=1001 ts=9 timeout-secs=3
----
error: frontier for u1001 did not reach 9 in time

peek id=77 ts=0
----
error: peek error: collection ID does not exist
"""


@pytest.mark.parametrize("topology", sorted(TOPOLOGIES))
def test_the_errors_scripts_match_exactly_print_as_spec_format_says(topology: str) -> None:
    assert_passes(parse_spec(SCRIPT, "errors.spec"), topology)

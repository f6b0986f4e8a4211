"""The replica's data model: plain definitions every layer above shares, with
no Trio and nothing else of ``replica`` (``tests/test_layout.py``).

Rows, datums and updates, with one :func:`consolidate` and one
:func:`accumulate`; ids; frontiers; scalar expressions and aggregates;
plans; dataflow descriptions; what relational operations mean (top-k's
places, table functions, thresholds), which the engine and the driver's
reference model both use; the replica's metrics and listeners; and the base
of the replica's errors, :class:`ComputeError`.
"""

from ._aggregates import AggregateExpr as AggregateExpr
from ._aggregates import AggregateFunc as AggregateFunc
from ._dataflow import Build as Build
from ._dataflow import DataflowClass as DataflowClass
from ._dataflow import DataflowDescription as DataflowDescription
from ._dataflow import IndexExport as IndexExport
from ._dataflow import IndexImport as IndexImport
from ._dataflow import MaterializedView as MaterializedView
from ._dataflow import SinkExport as SinkExport
from ._dataflow import SourceImport as SourceImport
from ._dataflow import Subscribe as Subscribe
from ._errors import ComputeError as ComputeError
from ._frontier import Frontier as Frontier
from ._ids import GlobalId as GlobalId
from ._ids import IdError as IdError
from ._listeners import Listeners as Listeners
from ._metrics import Metrics as Metrics
from ._plan import Aggregate as Aggregate
from ._plan import Constant as Constant
from ._plan import Filter as Filter
from ._plan import FlatMap as FlatMap
from ._plan import Get as Get
from ._plan import Join as Join
from ._plan import Map as Map
from ._plan import Negate as Negate
from ._plan import Plan as Plan
from ._plan import PlanError as PlanError
from ._plan import Project as Project
from ._plan import Reduce as Reduce
from ._plan import Threshold as Threshold
from ._plan import TopK as TopK
from ._plan import Union as Union
from ._relational import COMPLETE as COMPLETE
from ._relational import MAX_SERIES as MAX_SERIES
from ._relational import table_rows as table_rows
from ._relational import threshold_count as threshold_count
from ._relational import top_k_rows as top_k_rows
from ._rows import MAX_RESULT_ROWS as MAX_RESULT_ROWS
from ._rows import Datum as Datum
from ._rows import ResultTooLargeError as ResultTooLargeError
from ._rows import Reversed as Reversed
from ._rows import Row as Row
from ._rows import Update as Update
from ._rows import accumulate as accumulate
from ._rows import consolidate as consolidate
from ._rows import row_order as row_order
from ._rows import rows_of_counts as rows_of_counts
from ._scalar import Call as Call
from ._scalar import Column as Column
from ._scalar import EvalError as EvalError
from ._scalar import Literal as Literal
from ._scalar import Scalar as Scalar
from ._scalar import ScalarFunc as ScalarFunc

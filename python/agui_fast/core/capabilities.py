"""``ag_ui.core.capabilities`` path: the same names as the reference's module (ag-ui-protocol 1.0.0),
the capabilities of ``agui_fast.core``. A thin alias, so that ``from ag_ui.core.capabilities import X``
keeps working after swapping ``ag_ui.core`` for ``agui_fast.core``.
"""

from . import (  # noqa: F401
    SubagentInfo,
    SubAgentInfo,
    IdentityCapabilities,
    TransportCapabilities,
    ToolsCapabilities,
    OutputCapabilities,
    StateCapabilities,
    MultiAgentCapabilities,
    ReasoningCapabilities,
    MultimodalInputCapabilities,
    MultimodalOutputCapabilities,
    MultimodalCapabilities,
    ExecutionCapabilities,
    HumanInTheLoopCapabilities,
    AgentCapabilities,
)

__all__ = ['SubagentInfo', 'SubAgentInfo', 'IdentityCapabilities', 'TransportCapabilities', 'ToolsCapabilities', 'OutputCapabilities', 'StateCapabilities', 'MultiAgentCapabilities', 'ReasoningCapabilities', 'MultimodalInputCapabilities', 'MultimodalOutputCapabilities', 'MultimodalCapabilities', 'ExecutionCapabilities', 'HumanInTheLoopCapabilities', 'AgentCapabilities']

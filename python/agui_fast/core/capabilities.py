"""``ag_ui.core.capabilities`` for the one-import swap: the names of the reference module (1.0.0), from ``agui_fast.core``."""

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

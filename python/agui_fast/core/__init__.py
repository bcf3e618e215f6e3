"""Every type of ``ag_ui.core`` (AG-UI 1.0) as a msgspec Struct — a drop-in import.

``from agui_fast.core import *`` gives every name of ``ag_ui.core.__all__`` (1.0.0),
including the deprecated aliases. Class names, snake_case attributes, camelCase wire
names, defaults and constraints match the reference models; see docs/design.md for the
few deliberate differences. Construction validates like the reference (errors:
``agui_fast.errors.ValidationError``, also a pydantic ValidationError when pydantic is installed).
"""

import typing
from typing import Any, Dict, Literal

from ._base import BaseEvent, EventType
from ._models import *  # noqa: F401,F403
from ._models import (
    ActivityMessage,
    AgentCapabilities,
    AssistantMessage,
    AudioPart,
    BinaryInputContent,
    ContentPart,
    DataSource,
    DocumentPart,
    Event,
    ImagePart,
    JsonPatch,
    JsonPatchOperation,
    Message,
    PartSource,
    RunFinishedOutcome,
    SubagentFinishedOutcome,
    SubagentInfo,
    TextPart,
    UrlSource,
    VideoPart,
)
from ._base import _Model
from .token_usage import aggregate_token_usage, token_usage_from_langchain_metadata

PROTOCOL_VERSION = "1.0"
AGUI_METADATA_KEY = "ag-ui"

Metadata = Dict[str, Any]
State = Any
SubagentRunId = str
Role = Literal["developer", "system", "assistant", "user", "tool", "activity", "reasoning"]
ResumeStatus = Literal["resolved", "cancelled"]
ReasoningMessageRole = Literal["reasoning"]
ReasoningEncryptedValueSubtype = Literal["tool-call", "message"]
TextMessageRole = Literal["developer", "system", "assistant", "user"]

# Historic names of the reference, kept importable (ag_ui.core keeps them too).
GeneratedBaseModel = _Model
ConfiguredBaseModel = _Model
InputContent = ContentPart
InputContentPart = ContentPart
TextInputContent = TextPart
ImageInputContent = ImagePart
AudioInputContent = AudioPart
VideoInputContent = VideoPart
DocumentInputContent = DocumentPart
ImageInputPart = ImagePart
AudioInputPart = AudioPart
VideoInputPart = VideoPart
DocumentInputPart = DocumentPart
InputContentSource = PartSource
InputContentDataSource = DataSource
InputContentUrlSource = UrlSource
SubAgentInfo = SubagentInfo

EVENT_CLASSES = {cls.__struct_config__.tag: cls for cls in typing.get_args(Event)}
"""Map from the wire ``type`` string to the event Struct class."""

__all__ = [
    "AGUI_METADATA_KEY", "Metadata", "PROTOCOL_VERSION", "EventType", "BaseEvent",
    "TextMessageStartEvent", "TextMessageContentEvent", "TextMessageEndEvent",
    "TextMessageChunkEvent", "ToolCallStartEvent", "ToolCallArgsEvent", "ToolCallEndEvent",
    "ToolCallChunkEvent", "ToolCallResultEvent", "StateSnapshotEvent", "StateDeltaEvent",
    "MessagesSnapshotEvent", "ActivitySnapshotEvent", "ActivityDeltaEvent", "RawEvent",
    "CustomEvent", "RunStartedEvent", "RunFinishedEvent", "RunErrorEvent", "StepStartedEvent",
    "StepFinishedEvent", "ReasoningStartEvent", "ReasoningMessageStartEvent",
    "ReasoningMessageContentEvent", "ReasoningMessageEndEvent", "ReasoningMessageChunkEvent",
    "ReasoningEndEvent", "ReasoningEncryptedValueEvent", "ReasoningEncryptedValueSubtype",
    "ReasoningMessageRole", "RunFinishedOutcome", "RunFinishedSuccessOutcome", "TokenUsage",
    "token_usage_from_langchain_metadata", "aggregate_token_usage",
    "RunFinishedInterruptOutcome", "RunFinishedCancelledOutcome", "SubagentStartedEvent",
    "SubagentFinishedEvent", "SubagentFinishedOutcome", "SubagentFinishedSuccessOutcome",
    "SubagentFinishedSuspendedOutcome", "SubagentErrorEvent", "Event", "FunctionCall",
    "ToolCall", "BaseMessage", "DeveloperMessage", "SystemMessage", "AssistantMessage",
    "UserMessage", "ToolMessage", "ActivityMessage", "ReasoningMessage", "Message", "Role",
    "Context", "Tool", "Interrupt", "ResumeEntry", "ResumeStatus", "RunAgentInput", "State",
    "ContentPart", "TextPart", "ImagePart", "AudioPart", "VideoPart", "DocumentPart",
    "PartSource", "DataSource", "UrlSource", "FileSource", "TextInputContent",
    "InputContentDataSource", "InputContentUrlSource", "BinaryInputContent",
    "InputContentSource", "ImageInputContent", "AudioInputContent", "VideoInputContent",
    "DocumentInputContent", "ImageInputPart", "AudioInputPart", "VideoInputPart",
    "DocumentInputPart", "InputContent", "InputContentPart", "SubagentInfo", "SubAgentInfo",
    "IdentityCapabilities", "TransportCapabilities", "ToolsCapabilities",
    "OutputCapabilities", "StateCapabilities", "MultiAgentCapabilities",
    "ReasoningCapabilities", "MultimodalInputCapabilities", "MultimodalOutputCapabilities",
    "MultimodalCapabilities", "ExecutionCapabilities", "HumanInTheLoopCapabilities",
    "AgentCapabilities",
]

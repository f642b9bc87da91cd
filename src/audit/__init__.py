"""What an outsider sees of the log: the export for audit and the live event stream."""

from .export import (
    FORMAT,
    FORMAT_VERSION,
    ExportHeader,
    export_chunk,
    export_header,
    export_line,
    export_lines,
    header_line,
)
from .stream import event_ids, event_stream, read_messages, sse_message

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "ExportHeader",
    "event_ids",
    "event_stream",
    "export_chunk",
    "export_header",
    "export_line",
    "export_lines",
    "header_line",
    "read_messages",
    "sse_message",
]

//! Length-prefixed framing: a 4-byte big-endian length, then one `Event` message.
//!
//! The incremental splitter enforces the maximum frame size from the prefix alone,
//! before buffering anything of the body (like the reference: `4 + length` must not
//! exceed the limit, 10 MiB by default; exactly the limit is allowed), and reports every
//! failure with the frame index and the byte offset where that frame starts.

use super::error::{Error, Result};

/// The reference client's limit (10 MiB), applied to prefix + message.
pub const DEFAULT_MAX_FRAME_SIZE: usize = 10 * 1024 * 1024;

/// Prefix one message with its 4-byte big-endian length (messages of 4 GiB or more
/// cannot be framed).
pub fn frame_into(msg: &[u8], out: &mut Vec<u8>) -> Result<()> {
    let len = u32::try_from(msg.len())
        .map_err(|_| Error::Encode(format!("a {}-byte message does not fit a 4-byte length prefix", msg.len())))?;
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(msg);
    Ok(())
}

/// Incremental frame splitter. Feed chunks of any size; each complete frame's message
/// is handed to a callback together with its index and stream offset.
#[derive(Debug)]
pub struct FrameSplitter {
    buf: Vec<u8>,
    /// Stream offset of `buf[0]`.
    buf_offset: u64,
    /// Index of the next frame.
    index: usize,
    max_frame_size: usize,
    /// Once a stream failed it stays failed (nothing after an error is delivered).
    failed: Option<Error>,
}

impl Default for FrameSplitter {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_FRAME_SIZE)
    }
}

impl FrameSplitter {
    pub fn new(max_frame_size: usize) -> Self {
        FrameSplitter { buf: Vec::new(), buf_offset: 0, index: 0, max_frame_size, failed: None }
    }

    /// A splitter that starts in the middle of a stream (at a frame boundary), so that
    /// errors report positions in the whole stream when it is decoded in parts.
    pub fn at(max_frame_size: usize, offset: u64, frame_index: usize) -> Self {
        FrameSplitter { buf: Vec::new(), buf_offset: offset, index: frame_index, max_frame_size, failed: None }
    }

    /// Where a part of at least `budget` bytes starting at `start` (a frame boundary)
    /// may end: the first frame boundary at or after `start + budget`, or the end of
    /// `data`. Only length prefixes are read.
    pub fn cut_point(data: &[u8], start: usize, budget: usize) -> usize {
        let mut pos = start;
        while pos < data.len() && pos - start < budget {
            if data.len() - pos < 4 {
                return data.len();
            }
            let len = u32::from_be_bytes([data[pos], data[pos + 1], data[pos + 2], data[pos + 3]]) as usize;
            match pos.checked_add(4 + len) {
                Some(end) if end <= data.len() => pos = end,
                _ => return data.len(),
            }
        }
        pos
    }

    pub fn frame_index(&self) -> usize {
        self.index
    }

    /// Where the first frame starting in the next chunk begins: the bytes of `chunk`
    /// that complete the frame buffered so far (0 when none is; `chunk.len()` when
    /// `chunk` does not complete it). Cut points ([`Self::cut_point`]) start there.
    pub fn first_boundary(&self, chunk: &[u8]) -> usize {
        let have = self.buf.len();
        if have == 0 {
            return 0;
        }
        let mut prefix = [0u8; 4];
        let from_buf = have.min(4);
        prefix[..from_buf].copy_from_slice(&self.buf[..from_buf]);
        let from_chunk = 4 - from_buf;
        if chunk.len() < from_chunk {
            return chunk.len();
        }
        prefix[from_buf..].copy_from_slice(&chunk[..from_chunk]);
        let frame = (u32::from_be_bytes(prefix) as usize).saturating_add(4);
        frame.saturating_sub(have).min(chunk.len())
    }

    /// Bytes buffered for an unfinished frame.
    pub fn pending(&self) -> usize {
        self.buf.len()
    }

    pub fn max_frame_size(&self) -> usize {
        self.max_frame_size
    }

    /// Feed a chunk. `on_frame(message, frame_index, offset)` is called for every
    /// complete frame; an error from it stops the stream (and is returned).
    pub fn feed<F>(&mut self, chunk: &[u8], mut on_frame: F) -> Result<()>
    where
        F: FnMut(&[u8], usize, u64) -> Result<()>,
    {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let r = if self.buf.is_empty() {
            // Fast path: frames straight from the caller's chunk, copy only the tail.
            let offset = self.buf_offset;
            match self.split(chunk, offset, &mut on_frame) {
                Ok(used) => {
                    let tail = &chunk[used..];
                    // try_reserve: a huge chunk is an error to report, not an abort.
                    match self.buf.try_reserve(tail.len()) {
                        Ok(()) => {
                            self.buf.extend_from_slice(tail);
                            self.buf_offset = offset + used as u64;
                            Ok(())
                        }
                        Err(_) => Err(Error::OutOfMemory { bytes: tail.len() }),
                    }
                }
                Err(e) => Err(e),
            }
        } else if self.buf.try_reserve(chunk.len()).is_err() {
            Err(Error::OutOfMemory { bytes: chunk.len() })
        } else {
            let mut data = std::mem::take(&mut self.buf);
            data.extend_from_slice(chunk);
            let offset = self.buf_offset;
            let r = self.split(&data, offset, &mut on_frame);
            match r {
                Ok(used) => {
                    data.drain(..used);
                    self.buf = data;
                    self.buf_offset = offset + used as u64;
                    Ok(())
                }
                Err(e) => Err(e),
            }
        };
        if let Err(e) = &r {
            self.failed = Some(e.clone());
        }
        r
    }

    /// Split as many complete frames as `data` holds; returns the bytes consumed.
    fn split<F>(&mut self, data: &[u8], base: u64, on_frame: &mut F) -> Result<usize>
    where
        F: FnMut(&[u8], usize, u64) -> Result<()>,
    {
        let mut pos = 0usize;
        while data.len() - pos >= 4 {
            let len = u32::from_be_bytes([data[pos], data[pos + 1], data[pos + 2], data[pos + 3]]) as u64;
            let offset = base + pos as u64;
            if 4 + len > self.max_frame_size as u64 {
                return Err(Error::FrameTooLarge {
                    frame_index: self.index,
                    offset,
                    length: len,
                    max_frame_size: self.max_frame_size,
                });
            }
            let end = pos + 4 + len as usize;
            if end > data.len() {
                break;
            }
            let index = self.index;
            self.index += 1;
            on_frame(&data[pos + 4..end], index, offset)?;
            pos = end;
        }
        Ok(pos)
    }

    /// End of stream: an error if bytes of an unfinished frame (or prefix) remain.
    pub fn finish(&mut self) -> Result<()> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        if !self.buf.is_empty() {
            let e = Error::Truncated { frame_index: self.index, offset: self.buf_offset, trailing: self.buf.len() };
            self.failed = Some(e.clone());
            return Err(e);
        }
        Ok(())
    }
}

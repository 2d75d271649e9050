//! The link ports as whole frames: [`TxCollector`] assembles the beats a
//! core sends into frames, [`RxFeeder`] cuts frames into the beats a core
//! receives. A frame is the bytes of one `spec/wire.md` packet.

use crate::signals::BEAT;
use std::collections::VecDeque;

/// Assembles a port's outgoing beats (`tkeep` bytes of each, up to `tlast`)
/// into frames.
#[derive(Debug, Default)]
pub struct TxCollector {
    cur: Vec<u8>,
    done: VecDeque<Vec<u8>>,
}

impl TxCollector {
    /// Takes one beat that was accepted (`tvalid && tready`).
    pub fn beat(&mut self, data: &[u8; BEAT], keep: u32, last: bool) {
        for (i, &b) in data.iter().enumerate() {
            if keep >> i & 1 == 1 {
                self.cur.push(b);
            }
        }
        if last {
            self.done.push_back(std::mem::take(&mut self.cur));
        }
    }

    /// The next complete frame.
    pub fn pop(&mut self) -> Option<Vec<u8>> {
        self.done.pop_front()
    }

    /// Whether a frame is being sent (some of its beats have arrived).
    pub fn is_active(&self) -> bool {
        !self.cur.is_empty()
    }
}

/// Cuts queued frames into beats for a port, one beat per cycle.
#[derive(Debug, Default)]
pub struct RxFeeder {
    frames: VecDeque<Vec<u8>>,
    pos: usize,
}

/// One beat for a receive port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Beat {
    /// The bytes, lane 0 first (zero past the frame's end).
    pub data: [u8; BEAT],
    /// A bit per byte that belongs to the frame.
    pub keep: u32,
    /// The frame's last beat.
    pub last: bool,
}

impl RxFeeder {
    /// Queues a frame. Empty frames are ignored (a port cannot carry them).
    pub fn push(&mut self, frame: Vec<u8>) {
        if !frame.is_empty() {
            self.frames.push_back(frame);
        }
    }

    /// The beat to present this cycle, if any.
    pub fn current(&self) -> Option<Beat> {
        let f = self.frames.front()?;
        let n = (f.len() - self.pos).min(BEAT);
        let mut data = [0u8; BEAT];
        data[..n].copy_from_slice(&f[self.pos..self.pos + n]);
        let keep = if n == BEAT { u32::MAX } else { (1u32 << n) - 1 };
        Some(Beat {
            data,
            keep,
            last: self.pos + n == f.len(),
        })
    }

    /// The current beat was taken.
    pub fn advance(&mut self) {
        if let Some(f) = self.frames.front() {
            self.pos += BEAT;
            if self.pos >= f.len() {
                self.frames.pop_front();
                self.pos = 0;
            }
        }
    }

    /// Frames waiting (the one being fed included).
    pub fn pending(&self) -> usize {
        self.frames.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_through_beats() {
        let frame: Vec<u8> = (0..44u8).collect();
        let mut rx = RxFeeder::default();
        let mut tx = TxCollector::default();
        rx.push(frame.clone());
        while let Some(b) = rx.current() {
            tx.beat(&b.data, b.keep, b.last);
            rx.advance();
        }
        assert_eq!(tx.pop(), Some(frame));
        assert_eq!(tx.pop(), None);
    }
}

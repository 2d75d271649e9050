//! The attach health check: a known pattern through every memory path of
//! the board, so a broken path is named at attach instead of corrupting a
//! job.

use super::*;

/// A memory path the attach health check exercises.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HealthPath {
    /// Host stores through the BAR2 window, read back by a Get descriptor.
    WindowToGet,
    /// An inline Put descriptor, read back with BAR2 window loads.
    InlinePutToWindow,
    /// A Put descriptor sourcing the segment (board DMA read), read back
    /// with window loads.
    SegmentPutToWindow,
    /// An Atomic descriptor: its fetched value and the word in the window.
    Atomic,
}

impl std::fmt::Display for HealthPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            HealthPath::WindowToGet => "BAR2 window store -> Get descriptor",
            HealthPath::InlinePutToWindow => "inline Put descriptor -> BAR2 window load",
            HealthPath::SegmentPutToWindow => {
                "segment Put descriptor (board DDR read) -> BAR2 window load"
            }
            HealthPath::Atomic => "Atomic descriptor (fetched value and DDR word)",
        })
    }
}

impl FpgaConduit {
    /// The attach health check: a loopback of a known pattern through
    /// every memory path; a failure names the path.
    pub fn health_check(&self) -> Result<()> {
        let base = self.layout.health;
        let me = self.rank;
        let pattern: Vec<u8> = (0..4096u32)
            .map(|i| (i.wrapping_mul(37) ^ 0xA5) as u8)
            .collect();
        let fail = |path: HealthPath, what: String| {
            Err(ConduitError::Bootstrap(format!(
                "{}: health check failed on the {path} path: {what}",
                self.board.device
            )))
        };
        let mismatch = |a: &[u8], b: &[u8]| a.iter().zip(b).position(|(x, y)| x != y);
        // 1. Window stores, read back by a Get descriptor (to a second area).
        // SAFETY: the health area is 16 KiB inside the segment.
        unsafe { std::ptr::copy_nonoverlapping(pattern.as_ptr(), self.win(base), 4096) };
        let tag = {
            let mut h = self.lock();
            let tag = Self::fresh_tag(&mut h);
            h.expect(CtxId::DEFAULT, tag, Waiter::Keep);
            let d = Descriptor::Get {
                common: Self::common(tag, true),
                target: me as NodeId,
                remote: base,
                local: Local::Segment(base + 4096),
                len: 4096,
            };
            self.submit(&mut h, &d)?;
            tag
        };
        let c = self.wait_tag(tag)?;
        let mut back = vec![0u8; 4096];
        // SAFETY: as above.
        unsafe { std::ptr::copy_nonoverlapping(self.win(base + 4096), back.as_mut_ptr(), 4096) };
        if !c.status.is_ok() {
            return fail(
                HealthPath::WindowToGet,
                format!("completion status {}", c.status),
            );
        }
        if let Some(i) = mismatch(&pattern, &back) {
            return fail(HealthPath::WindowToGet, format!("byte {i} differs"));
        }
        // 2. Inline put to self, read through the window.
        let inline = &pattern[..32];
        let tag = {
            let mut h = self.lock();
            let tag = Self::fresh_tag(&mut h);
            h.expect(CtxId::DEFAULT, tag, Waiter::Keep);
            let d = Descriptor::Put {
                common: Self::common(tag, true),
                target: me as NodeId,
                remote: base + 8192,
                source: cmd::PutSource::Inline(
                    Inline::new(inline).map_err(|_| ConduitError::Unsupported("inline"))?,
                ),
            };
            self.submit(&mut h, &d)?;
            tag
        };
        let c = self.wait_tag(tag)?;
        // SAFETY: as above.
        unsafe { std::ptr::copy_nonoverlapping(self.win(base + 8192), back.as_mut_ptr(), 32) };
        if !c.status.is_ok() {
            return fail(
                HealthPath::InlinePutToWindow,
                format!("completion status {}", c.status),
            );
        }
        if let Some(i) = mismatch(inline, &back[..32]) {
            return fail(HealthPath::InlinePutToWindow, format!("byte {i} differs"));
        }
        // 3. Put from the segment (the window-written pattern) to self.
        let tag = {
            let mut h = self.lock();
            let tag = Self::fresh_tag(&mut h);
            h.expect(CtxId::DEFAULT, tag, Waiter::Keep);
            let d = Descriptor::Put {
                common: Self::common(tag, true),
                target: me as NodeId,
                remote: base + 12288,
                source: cmd::PutSource::Local {
                    addr: Local::Segment(base),
                    len: 4096,
                },
            };
            self.submit(&mut h, &d)?;
            tag
        };
        let c = self.wait_tag(tag)?;
        // SAFETY: as above.
        unsafe { std::ptr::copy_nonoverlapping(self.win(base + 12288), back.as_mut_ptr(), 4096) };
        if !c.status.is_ok() {
            return fail(
                HealthPath::SegmentPutToWindow,
                format!("completion status {}", c.status),
            );
        }
        if let Some(i) = mismatch(&pattern, &back) {
            return fail(HealthPath::SegmentPutToWindow, format!("byte {i} differs"));
        }
        // 4. Atomics: fetch-add on a word written through the window.
        let word = base + 8192 + 64;
        let v0 = 0x0123_4567_89AB_CDEFu64;
        // SAFETY: an aligned word of the health area.
        unsafe { AtomicU64::from_ptr(self.win(word).cast()).store(v0, Ordering::Release) };
        let old = self.raw_atomic(
            CtxId::DEFAULT,
            me,
            word,
            AmoOp::FetchAdd,
            AmoWidth::W64,
            5,
            0,
            false,
        )?;
        let now = self.load64(word);
        if old != v0 || now != v0.wrapping_add(5) {
            return fail(
                HealthPath::Atomic,
                format!("fetched {old:#x} (expected {v0:#x}), word now {now:#x}"),
            );
        }
        // Leave the health area as the board left it: zeros.
        // SAFETY: as above.
        unsafe { std::ptr::write_bytes(self.win(base), 0, HEALTH_BYTES as usize) };
        Ok(())
    }
}

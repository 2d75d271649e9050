//! Deterministic datagram impairment for tests: drop, duplicate and hold
//! back (reorder) a percentage of the datagrams a reliable transport sends.
//! The ipv6 bridge applies it from `FSHMEM_IPV6_IMPAIR`, devsim's board
//! links from `FSHMEM_DEVSIM_IMPAIR` (same syntax: `loss=5,dup=1,reorder=10`,
//! percentages of at most 50 each; see [`Impair`]'s
//! [`ConfigValue`](crate::config::ConfigValue) form). No I/O: the caller
//! sends what [`Impairer::pass`] and [`Impairer::release`] hand it.

use std::time::{Duration, Instant};

/// Percentages of datagrams dropped, duplicated and delayed (reordered).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Impair {
    /// Percent dropped.
    pub loss: f64,
    /// Percent sent twice.
    pub dup: f64,
    /// Percent held back 0.1–2 ms.
    pub reorder: f64,
}

impl crate::config::ConfigValue for Impair {
    /// Parses `loss=5,dup=1,reorder=10` (percentages, each at most 50; a
    /// `%` sign is allowed; missing keys are 0).
    ///
    /// ```
    /// use gasnet_core::config::ConfigValue;
    /// use gasnet_core::impair::Impair;
    /// let f = Impair::parse_value("loss=5,reorder=10%").unwrap();
    /// assert_eq!((f.loss, f.dup, f.reorder), (5.0, 0.0, 10.0));
    /// assert!(Impair::parse_value("loss=90").is_err());
    /// assert_eq!(Impair::parse_value(&f.show_value()).unwrap(), f);
    /// ```
    fn parse_value(v: &str) -> Result<Impair, String> {
        let mut f = Impair::default();
        let bad = || "loss=P,dup=P,reorder=P (percentages of at most 50)".to_string();
        for part in v.split(',').filter(|p| !p.trim().is_empty()) {
            let (k, x) = part.split_once('=').ok_or_else(bad)?;
            let x: f64 = x
                .trim()
                .trim_end_matches('%')
                .parse()
                .ok()
                .filter(|x: &f64| (0.0..=50.0).contains(x))
                .ok_or_else(bad)?;
            match k.trim() {
                "loss" => f.loss = x,
                "dup" => f.dup = x,
                "reorder" => f.reorder = x,
                _ => return Err(bad()),
            }
        }
        Ok(f)
    }

    fn show_value(&self) -> String {
        format!(
            "loss={},dup={},reorder={}",
            self.loss, self.dup, self.reorder
        )
    }
}

/// Applies an [`Impair`] to a stream of outgoing datagrams, with a seeded
/// generator (runs are repeatable for a given seed and traffic).
#[derive(Debug)]
pub struct Impairer {
    f: Impair,
    rng: u64,
    delayed: Vec<(Instant, u16, Vec<u8>)>,
}

impl Impairer {
    /// An impairer of `f` whose generator starts from `seed`.
    pub fn new(f: Impair, seed: u64) -> Impairer {
        Impairer {
            f,
            rng: seed | 1,
            delayed: Vec::new(),
        }
    }

    /// Passes one datagram for `dst` through: dropped, sent (once or twice)
    /// through `send` at once, or held back until [`Impairer::release`].
    pub fn pass(&mut self, now: Instant, dst: u16, bytes: &[u8], send: &mut dyn FnMut(u16, &[u8])) {
        if chance(&mut self.rng, self.f.loss) {
            return;
        }
        let copies = if chance(&mut self.rng, self.f.dup) {
            2
        } else {
            1
        };
        for _ in 0..copies {
            if chance(&mut self.rng, self.f.reorder) {
                let hold = Duration::from_micros(100 + xorshift(&mut self.rng) % 1900);
                self.delayed.push((now + hold, dst, bytes.to_vec()));
            } else {
                send(dst, bytes);
            }
        }
    }

    /// Sends the held datagrams that are due; returns whether any was.
    pub fn release(&mut self, now: Instant, send: &mut dyn FnMut(u16, &[u8])) -> bool {
        let mut any = false;
        let mut k = 0;
        while k < self.delayed.len() {
            if self.delayed[k].0 <= now {
                let (_, d, b) = self.delayed.swap_remove(k);
                send(d, &b);
                any = true;
            } else {
                k += 1;
            }
        }
        any
    }

    /// When the next held datagram is due, if any is held.
    pub fn next_release(&self) -> Option<Instant> {
        self.delayed.iter().map(|d| d.0).min()
    }
}

fn xorshift(s: &mut u64) -> u64 {
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    s.wrapping_mul(0x2545_F491_4F6C_DD1D)
}

fn chance(s: &mut u64, percent: f64) -> bool {
    percent > 0.0 && (xorshift(s) % 1_000_000) as f64 / 10_000.0 < percent
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_are_roughly_the_ones_asked_for_and_held_datagrams_come_out() {
        let f = Impair {
            loss: 10.0,
            dup: 5.0,
            reorder: 20.0,
        };
        let mut imp = Impairer::new(f, 42);
        let now = Instant::now();
        let mut sent = 0usize;
        for i in 0..10_000u32 {
            imp.pass(now, 1, &i.to_be_bytes(), &mut |_, _| sent += 1);
        }
        let held = imp.delayed.len();
        assert!((1500..2700).contains(&held), "{held}");
        let later = now + Duration::from_millis(3);
        assert!(imp.release(later, &mut |_, _| sent += 1));
        assert!(imp.next_release().is_none());
        // About 90% survive, 5% of those twice.
        assert!((9000..9900).contains(&sent), "{sent}");
    }
}

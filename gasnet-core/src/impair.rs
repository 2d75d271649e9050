//! Deterministic datagram impairment for tests: drop, duplicate and hold
//! back (reorder) a percentage of the datagrams a reliable transport sends,
//! and cut one node off from the others at a given moment. The ipv6 bridge
//! applies it from `FSHMEM_IPV6_IMPAIR`, devsim's board links from
//! `FSHMEM_DEVSIM_IMPAIR` (same syntax: `loss=5,dup=1,reorder=10,cut=1@1764358000.5`,
//! percentages of at most 50 each; see [`Impair`]'s
//! [`ConfigValue`](crate::config::ConfigValue) form). No I/O: the caller
//! sends what [`Impairer::pass`] and [`Impairer::release`] hand it.

use std::time::{Duration, Instant, SystemTime};

/// Percentages of datagrams dropped, duplicated and delayed (reordered).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Impair {
    /// Percent dropped.
    pub loss: f64,
    /// Percent sent twice.
    pub dup: f64,
    /// Percent held back 0.1–2 ms.
    pub reorder: f64,
    /// `cut=N@S`: node (PE, board) `N` is cut off from every other node
    /// from the moment `S` (UNIX time in seconds, fractions allowed: the
    /// same instant for every process of the host, however far apart they
    /// started): each node drops every datagram to `N`, and `N` drops
    /// every datagram it sends or receives, as a cable pulled out (a peer
    /// that is alive but unreachable, for liveness tests;
    /// [`Impairer::cut_in`] is the receiving side).
    pub cut: Option<(u16, SystemTime)>,
}

impl crate::config::ConfigValue for Impair {
    /// Parses `loss=5,dup=1,reorder=10` (percentages, each at most 50; a
    /// `%` sign is allowed; missing keys are 0) and `cut=N@S` (node `N`
    /// cut off at UNIX time `S` seconds).
    ///
    /// ```
    /// use gasnet_core::config::ConfigValue;
    /// use gasnet_core::impair::Impair;
    /// use std::time::{Duration, SystemTime};
    /// let f = Impair::parse_value("loss=5,reorder=10%").unwrap();
    /// assert_eq!((f.loss, f.dup, f.reorder), (5.0, 0.0, 10.0));
    /// assert!(Impair::parse_value("loss=90").is_err());
    /// assert_eq!(Impair::parse_value(&f.show_value()).unwrap(), f);
    /// let c = Impair::parse_value("cut=1@1764358000.25").unwrap();
    /// let at = SystemTime::UNIX_EPOCH + Duration::from_millis(1_764_358_000_250);
    /// assert_eq!(c.cut, Some((1, at)));
    /// assert_eq!(Impair::parse_value(&c.show_value()).unwrap(), c);
    /// assert!(Impair::parse_value("cut=1").is_err());
    /// ```
    fn parse_value(v: &str) -> Result<Impair, String> {
        let mut f = Impair::default();
        let bad = || {
            "loss=P,dup=P,reorder=P (percentages of at most 50), cut=NODE@UNIX_SECONDS".to_string()
        };
        for part in v.split(',').filter(|p| !p.trim().is_empty()) {
            let (k, x) = part.split_once('=').ok_or_else(bad)?;
            if k.trim() == "cut" {
                let (n, t) = x.split_once('@').ok_or_else(bad)?;
                let n: u16 = n.trim().parse().map_err(|_| bad())?;
                let t: f64 = t.trim().parse().map_err(|_| bad())?;
                let t = Duration::try_from_secs_f64(t).map_err(|_| bad())?;
                f.cut = Some((n, SystemTime::UNIX_EPOCH + t));
                continue;
            }
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
        let cut = self
            .cut
            .map(|(n, t)| {
                let s = t.duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default();
                format!(",cut={n}@{}.{:09}", s.as_secs(), s.subsec_nanos())
            })
            .unwrap_or_default();
        format!(
            "loss={},dup={},reorder={}{cut}",
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
    /// This node, and when the cut (if any) starts.
    me: u16,
    cut_at: Option<(u16, Instant)>,
}

impl Impairer {
    /// The impairer of node `me` (a PE's rank, a board's node), applying
    /// `f` with a generator that starts from `seed`.
    pub fn new(f: Impair, seed: u64, me: u16) -> Impairer {
        let (now, wall) = (Instant::now(), SystemTime::now());
        Impairer {
            f,
            rng: seed | 1,
            delayed: Vec::new(),
            me,
            // The cut's moment on this process's monotonic clock.
            cut_at: f.cut.map(|(n, t)| {
                let at = match t.duration_since(wall) {
                    Ok(ahead) => now + ahead,
                    Err(past) => now.checked_sub(past.duration()).unwrap_or(now),
                };
                (n, at)
            }),
        }
    }

    /// Whether a datagram that arrives at `now` is lost to the cut: this
    /// node is the one cut off and its cut has begun (it then hears
    /// nothing, whenever the others' own cut began).
    pub fn cut_in(&self, now: Instant) -> bool {
        self.cut_at.is_some_and(|(n, at)| n == self.me && now >= at)
    }

    /// Whether a datagram to `dst` is lost to the cut at `now`.
    fn cut(&self, now: Instant, dst: u16) -> bool {
        self.cut_at
            .is_some_and(|(n, at)| now >= at && (n == self.me || n == dst))
    }

    /// Passes one datagram for `dst` through: dropped, sent (once or twice)
    /// through `send` at once, or held back until [`Impairer::release`].
    pub fn pass(&mut self, now: Instant, dst: u16, bytes: &[u8], send: &mut dyn FnMut(u16, &[u8])) {
        if self.cut(now, dst) || chance(&mut self.rng, self.f.loss) {
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
                if !self.cut(now, d) {
                    send(d, &b);
                    any = true;
                }
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
            cut: None,
        };
        let mut imp = Impairer::new(f, 42, 0);
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

    #[test]
    fn a_cut_node_sends_nothing_and_gets_nothing_once_the_cut_starts() {
        let f = Impair {
            cut: Some((1, SystemTime::now() + Duration::from_millis(10))),
            ..Impair::default()
        };
        let (mut n0, mut n1) = (Impairer::new(f, 1, 0), Impairer::new(f, 2, 1));
        let t0 = Instant::now();
        let mut sent = Vec::new();
        for (t, label) in [(t0, "before"), (t0 + Duration::from_millis(20), "after")] {
            n0.pass(t, 1, b"x", &mut |d, _| sent.push((label, 0, d)));
            n0.pass(t, 2, b"x", &mut |d, _| sent.push((label, 0, d)));
            n1.pass(t, 0, b"x", &mut |d, _| sent.push((label, 1, d)));
        }
        assert_eq!(
            sent,
            [
                ("before", 0, 1),
                ("before", 0, 2),
                ("before", 1, 0),
                ("after", 0, 2)
            ]
        );
        let later = t0 + Duration::from_millis(20);
        assert!(!n1.cut_in(t0) && n1.cut_in(later) && !n0.cut_in(later));
    }
}

//! The router's active messages (`spec/conduit.md` §10.4): a request goes
//! by its target PE; handlers are registered in both conduits, and the
//! on-node one, which names local ranks, is wrapped to show job ranks.

use super::{OFF_POLL_EVERY, OnNode, Path, Routed};
use crate::contract::{ActiveMessages, Conduit};
use crate::error::Result;
use crate::{Category, HandlerFn};
use gasnet_core::{AmError, AmMessage, NodeId, ReplySink, Token};
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// A handler of the on-node conduit, which names local ranks, made to
/// show job ranks to `f`: the message's source, and the token's.
fn job_ranked(f: HandlerFn, locals: Arc<[usize]>) -> HandlerFn {
    Arc::new(move |tok: &mut Token<'_>, msg: &AmMessage<'_>| {
        let src = locals
            .get(msg.src as usize)
            .map_or(msg.src, |&pe| pe as NodeId);
        let m = AmMessage {
            src,
            category: msg.category,
            direction: msg.direction,
            handler: msg.handler,
            args: msg.args,
            payload: msg.payload,
            offset: msg.offset,
        };
        let mut via = Forward(tok);
        let mut t = Token::new(src, msg.direction, &mut via);
        f(&mut t, &m);
    })
}

/// Sends a wrapped handler's reply through the on-node token it was given.
struct Forward<'a, 'b>(&'a mut Token<'b>);

impl ReplySink for Forward<'_, '_> {
    fn send_reply(
        &mut self,
        _dst: NodeId,
        category: Category,
        handler: u8,
        args: &[u32],
        payload: &[u8],
        offset: u64,
    ) -> std::result::Result<(), AmError> {
        self.0.reply(category, handler, args, payload, offset)
    }
}

impl<On: OnNode, Off: Conduit> ActiveMessages for Routed<On, Off> {
    fn am_request(
        &self,
        pe: usize,
        category: Category,
        handler: u8,
        args: &[u32],
        payload: &[u8],
        offset: usize,
    ) -> Result<()> {
        match self.path(pe)? {
            Path::On(l) => self
                .on
                .am_request(l, category, handler, args, payload, offset)
                .map_err(|e| self.lift(e)),
            Path::Off => self
                .off
                .am_request(pe, category, handler, args, payload, offset)
                .map_err(|e| self.off_err(e)),
        }
    }

    fn register_handler(&self, index: u8, f: HandlerFn) -> Result<()> {
        self.on
            .register_handler(index, job_ranked(f.clone(), self.locals.clone()))?;
        self.off.register_handler(index, f)
    }

    fn register_system_handler(&self, index: u8, f: HandlerFn) -> Result<()> {
        self.on
            .register_system_handler(index, job_ranked(f.clone(), self.locals.clone()))?;
        self.off.register_system_handler(index, f)
    }

    #[inline]
    fn poll(&self) -> Result<()> {
        self.poll_served().map(drop)
    }

    fn poll_served(&self) -> Result<bool> {
        let mut served = self.on.poll_served().map_err(|e| self.lift(e))?;
        if self
            .polls
            .fetch_add(1, Ordering::Relaxed)
            .is_multiple_of(OFF_POLL_EVERY)
        {
            served |= self.off.poll_served().map_err(|e| self.off_err(e))?;
        }
        Ok(served)
    }
}

//! Active messages: the handler table and the token a handler replies with.
//!
//! A handler is looked up by its 8-bit index (the opcode the hardware core
//! passes), never by function pointer. A request handler gets a [`Token`]
//! that can send at most one reply, and only to the requester; a reply
//! handler's token refuses to reply.

use crate::types::{Category, Direction, MAX_ARGS, MAX_LONG, MAX_MEDIUM, NodeId, handlers};
use std::fmt;
use std::sync::Arc;

/// One delivered active message, as a handler sees it.
#[derive(Debug)]
pub struct AmMessage<'a> {
    /// The node that sent it.
    pub src: NodeId,
    /// Short, Medium or Long.
    pub category: Category,
    /// Request or reply.
    pub direction: Direction,
    /// The handler index it named.
    pub handler: u8,
    /// Its 32-bit arguments (at most [`MAX_ARGS`]).
    pub args: &'a [u32],
    /// Medium: the bounce-buffer bytes. Long: a private copy of the bytes
    /// as written into the segment at [`AmMessage::offset`] (never a view
    /// of the segment, which peers may write while the handler runs).
    /// Short: empty.
    pub payload: &'a [u8],
    /// Long: the segment offset the payload was written at. Otherwise 0.
    pub offset: u64,
}

/// Errors of the active-message layer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AmError {
    /// More than [`MAX_ARGS`] arguments.
    TooManyArgs(usize),
    /// A payload longer than its category allows.
    PayloadTooLong {
        /// The category that was asked for.
        category: Category,
        /// The length that was asked for.
        len: usize,
        /// The category's maximum.
        max: usize,
    },
    /// A Short message with a payload.
    ShortWithPayload(usize),
    /// A reply handler tried to reply.
    ReplyFromReply,
    /// A request handler tried to reply twice.
    AlreadyReplied,
    /// User registration below [`handlers::FIRST_USER`].
    ReservedIndex(u8),
    /// The index already has a handler.
    AlreadyRegistered(u8),
    /// No handler registered at this index.
    NoHandler(u8),
    /// A host handler asked for at an index of the board's compute core
    /// (`handlers::FIRST_COMPUTE..=255` on a board with `CAPS.COMPUTE`).
    ComputeIndex(u8),
    /// The board's compute core dropped a request it could not run
    /// (`ERR_STATUS.COMPUTE`).
    ComputeRejected(crate::compute::Rejected),
    /// The reply could not be queued by the transport.
    Transport(String),
}

impl fmt::Display for AmError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AmError::TooManyArgs(n) => write!(f, "{n} AM arguments given, at most {MAX_ARGS}"),
            AmError::PayloadTooLong { category, len, max } => {
                write!(f, "{category:?} AM payload of {len} bytes exceeds {max}")
            }
            AmError::ShortWithPayload(n) => write!(f, "Short AM given a {n}-byte payload"),
            AmError::ReplyFromReply => write!(f, "a reply handler cannot reply"),
            AmError::AlreadyReplied => write!(f, "a request handler may reply only once"),
            AmError::ReservedIndex(i) => write!(
                f,
                "handler index {i} is reserved for the system (user handlers start at {})",
                handlers::FIRST_USER
            ),
            AmError::AlreadyRegistered(i) => write!(f, "handler index {i} is already registered"),
            AmError::NoHandler(i) => write!(f, "no handler registered at index {i}"),
            AmError::ComputeIndex(i) => write!(
                f,
                "handler index {i} is one of the board's compute handlers ({}..=255, run by \
                 its compute core, CAPS.COMPUTE), not a host handler",
                handlers::FIRST_COMPUTE
            ),
            AmError::ComputeRejected(r) => write!(
                f,
                "the board's compute core dropped a request from PE {} to handler {} \
                 ({}), one of its compute handlers ({}..=255): {} (ERR_STATUS.COMPUTE)",
                r.src,
                r.handler,
                r.arguments(),
                handlers::FIRST_COMPUTE,
                r.why()
            ),
            AmError::Transport(s) => write!(f, "transport: {s}"),
        }
    }
}

impl std::error::Error for AmError {}

/// Checks an AM's shape against the limits of its category.
///
/// ```
/// use gasnet_core::{Category, am::check_shape};
/// assert!(check_shape(Category::Medium, 3, 4096).is_ok());
/// assert!(check_shape(Category::Short, 1, 8).is_err());
/// ```
pub fn check_shape(category: Category, nargs: usize, payload_len: usize) -> Result<(), AmError> {
    if nargs > MAX_ARGS {
        return Err(AmError::TooManyArgs(nargs));
    }
    let max = match category {
        Category::Short => {
            if payload_len != 0 {
                return Err(AmError::ShortWithPayload(payload_len));
            }
            0
        }
        Category::Medium => MAX_MEDIUM,
        Category::Long => MAX_LONG,
    };
    if payload_len > max {
        return Err(AmError::PayloadTooLong {
            category,
            len: payload_len,
            max,
        });
    }
    Ok(())
}

/// Where a token's reply goes: implemented by each transport (and by the
/// reference engine) to queue a reply message back to the requester.
pub trait ReplySink {
    /// Queues a reply to `dst`. `offset` is meaningful for Long only.
    fn send_reply(
        &mut self,
        dst: NodeId,
        category: Category,
        handler: u8,
        args: &[u32],
        payload: &[u8],
        offset: u64,
    ) -> Result<(), AmError>;
}

/// Handed to a handler: who sent the message, and (for requests) the one
/// reply it may send back.
pub struct Token<'a> {
    src: NodeId,
    direction: Direction,
    replied: bool,
    sink: &'a mut dyn ReplySink,
}

impl<'a> Token<'a> {
    /// A token for a message from `src`; replies go through `sink`.
    pub fn new(src: NodeId, direction: Direction, sink: &'a mut dyn ReplySink) -> Self {
        Token {
            src,
            direction,
            replied: false,
            sink,
        }
    }

    /// The requester (or replier) node.
    pub fn src(&self) -> NodeId {
        self.src
    }

    /// Whether this token has replied.
    pub fn has_replied(&self) -> bool {
        self.replied
    }

    /// Replies to the requester. Fails for reply handlers, on a second reply,
    /// and for shapes the category does not allow.
    pub fn reply(
        &mut self,
        category: Category,
        handler: u8,
        args: &[u32],
        payload: &[u8],
        offset: u64,
    ) -> Result<(), AmError> {
        if self.direction == Direction::Reply {
            return Err(AmError::ReplyFromReply);
        }
        if self.replied {
            return Err(AmError::AlreadyReplied);
        }
        check_shape(category, args.len(), payload.len())?;
        self.sink
            .send_reply(self.src, category, handler, args, payload, offset)?;
        self.replied = true;
        Ok(())
    }

    /// Replies with a Short message.
    pub fn reply_short(&mut self, handler: u8, args: &[u32]) -> Result<(), AmError> {
        self.reply(Category::Short, handler, args, &[], 0)
    }

    /// Replies with a Medium message.
    pub fn reply_medium(
        &mut self,
        handler: u8,
        args: &[u32],
        payload: &[u8],
    ) -> Result<(), AmError> {
        self.reply(Category::Medium, handler, args, payload, 0)
    }

    /// Replies with a Long message written at `offset` in the requester's segment.
    pub fn reply_long(
        &mut self,
        handler: u8,
        args: &[u32],
        payload: &[u8],
        offset: u64,
    ) -> Result<(), AmError> {
        self.reply(Category::Long, handler, args, payload, offset)
    }
}

/// A registered handler. Handlers run inside the runtime's poll, so they
/// must be short and must not block.
pub type HandlerFn = Arc<dyn Fn(&mut Token<'_>, &AmMessage<'_>) + Send + Sync>;

/// The 256-entry handler table, indexed by handler opcode.
#[derive(Clone)]
pub struct HandlerTable {
    entries: Vec<Option<HandlerFn>>,
}

impl Default for HandlerTable {
    fn default() -> Self {
        HandlerTable {
            entries: vec![None; 256],
        }
    }
}

impl fmt::Debug for HandlerTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let used: Vec<usize> = (0..256).filter(|&i| self.entries[i].is_some()).collect();
        f.debug_struct("HandlerTable")
            .field("registered", &used)
            .finish()
    }
}

impl HandlerTable {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers a user handler at `index` (`FIRST_USER..=255`).
    ///
    /// ```
    /// use gasnet_core::{HandlerTable, handlers};
    /// use std::sync::Arc;
    /// let mut t = HandlerTable::new();
    /// t.register_user(handlers::FIRST_USER, Arc::new(|_tok, _msg| {})).unwrap();
    /// assert!(t.register_user(handlers::PUT, Arc::new(|_tok, _msg| {})).is_err());
    /// ```
    pub fn register_user(&mut self, index: u8, f: HandlerFn) -> Result<(), AmError> {
        if index < handlers::FIRST_USER {
            return Err(AmError::ReservedIndex(index));
        }
        self.insert(index, f)
    }

    /// Registers a system handler at a reserved index (`1..FIRST_USER`).
    /// For transports and the runtime, not user code.
    pub fn register_system(&mut self, index: u8, f: HandlerFn) -> Result<(), AmError> {
        if index == handlers::INVALID || index >= handlers::FIRST_USER {
            return Err(AmError::ReservedIndex(index));
        }
        self.insert(index, f)
    }

    fn insert(&mut self, index: u8, f: HandlerFn) -> Result<(), AmError> {
        let slot = &mut self.entries[index as usize];
        if slot.is_some() {
            return Err(AmError::AlreadyRegistered(index));
        }
        *slot = Some(f);
        Ok(())
    }

    /// The handler at `index`, if any.
    pub fn get(&self, index: u8) -> Option<&HandlerFn> {
        self.entries[index as usize].as_ref()
    }

    /// Runs the handler named by `msg`, with a token replying through `sink`.
    pub fn dispatch(&self, msg: &AmMessage<'_>, sink: &mut dyn ReplySink) -> Result<(), AmError> {
        let f = self
            .get(msg.handler)
            .ok_or(AmError::NoHandler(msg.handler))?;
        let mut token = Token::new(msg.src, msg.direction, sink);
        f(&mut token, msg);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    type Sent = (NodeId, Category, u8, Vec<u32>, Vec<u8>);

    #[derive(Default)]
    struct Recorder(Vec<Sent>);
    impl ReplySink for Recorder {
        fn send_reply(
            &mut self,
            dst: NodeId,
            category: Category,
            handler: u8,
            args: &[u32],
            payload: &[u8],
            _offset: u64,
        ) -> Result<(), AmError> {
            self.0
                .push((dst, category, handler, args.to_vec(), payload.to_vec()));
            Ok(())
        }
    }

    fn msg(direction: Direction, handler: u8) -> AmMessage<'static> {
        AmMessage {
            src: 3,
            category: Category::Short,
            direction,
            handler,
            args: &[7, 8],
            payload: &[],
            offset: 0,
        }
    }

    #[test]
    fn request_replies_once_to_requester() {
        let mut t = HandlerTable::new();
        let second = Arc::new(Mutex::new(None));
        let s2 = second.clone();
        t.register_user(
            100,
            Arc::new(move |tok, m| {
                tok.reply_short(101, &[m.args[0] + m.args[1]]).unwrap();
                *s2.lock().unwrap() = Some(tok.reply_short(101, &[0]));
            }),
        )
        .unwrap();
        let mut rec = Recorder::default();
        t.dispatch(&msg(Direction::Request, 100), &mut rec).unwrap();
        assert_eq!(rec.0, vec![(3, Category::Short, 101, vec![15], vec![])]);
        assert_eq!(*second.lock().unwrap(), Some(Err(AmError::AlreadyReplied)));
    }

    #[test]
    fn reply_handler_cannot_reply() {
        let mut t = HandlerTable::new();
        let got = Arc::new(Mutex::new(None));
        let g = got.clone();
        t.register_user(
            100,
            Arc::new(move |tok, _| *g.lock().unwrap() = Some(tok.reply_short(100, &[]))),
        )
        .unwrap();
        let mut rec = Recorder::default();
        t.dispatch(&msg(Direction::Reply, 100), &mut rec).unwrap();
        assert_eq!(*got.lock().unwrap(), Some(Err(AmError::ReplyFromReply)));
        assert!(rec.0.is_empty());
    }

    #[test]
    fn registration_rules() {
        let mut t = HandlerTable::new();
        let h: HandlerFn = Arc::new(|_, _| {});
        assert_eq!(
            t.register_user(10, h.clone()),
            Err(AmError::ReservedIndex(10))
        );
        assert_eq!(
            t.register_system(0, h.clone()),
            Err(AmError::ReservedIndex(0))
        );
        assert_eq!(
            t.register_system(70, h.clone()),
            Err(AmError::ReservedIndex(70))
        );
        t.register_system(handlers::PUT, h.clone()).unwrap();
        assert_eq!(
            t.register_system(handlers::PUT, h.clone()),
            Err(AmError::AlreadyRegistered(handlers::PUT))
        );
        let mut rec = Recorder::default();
        assert_eq!(
            t.dispatch(&msg(Direction::Request, 200), &mut rec),
            Err(AmError::NoHandler(200))
        );
    }

    #[test]
    fn shape_limits() {
        assert!(check_shape(Category::Short, 16, 0).is_ok());
        assert_eq!(
            check_shape(Category::Short, 17, 0),
            Err(AmError::TooManyArgs(17))
        );
        assert!(check_shape(Category::Medium, 0, MAX_MEDIUM + 1).is_err());
        assert!(check_shape(Category::Long, 0, MAX_LONG).is_ok());
        assert!(check_shape(Category::Long, 0, MAX_LONG + 1).is_err());
    }
}

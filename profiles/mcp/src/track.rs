//! Progress and cancellation bookkeeping for the requests a server is running.

use rpcwire::RequestHandle;

/// The longest request id or progress token kept, in bytes of JSON text (quotes included):
/// rpcwire's own id limit. A request whose progress token is longer gets no progress.
pub const MAX_KEY_LEN: usize = rpcwire::wire::MAX_STORED_ID_LEN;

/// A short piece of JSON text (an id or a progress token) kept without a heap.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Key {
    len: u8,
    bytes: [u8; MAX_KEY_LEN],
}

impl Key {
    const EMPTY: Key = Key {
        len: 0,
        bytes: [0; MAX_KEY_LEN],
    };

    fn new(text: &[u8]) -> Option<Key> {
        let mut key = Key::EMPTY;
        key.bytes.get_mut(..text.len())?.copy_from_slice(text);
        key.len = u8::try_from(text.len()).ok()?;
        Some(key)
    }

    fn get(&self) -> &[u8] {
        self.bytes.get(..usize::from(self.len)).unwrap_or(&[])
    }
}

/// One running request.
#[derive(Clone, Copy)]
struct Entry {
    handle: RequestHandle,
    id: Key,
    /// The progress token (empty: none).
    token: Key,
    /// The last progress sent (`None`: none yet).
    last: Option<u32>,
    cancelled: bool,
}

/// The requests a server is running, up to `N` at once: each one's id (to find it from
/// `notifications/cancelled`), its progress token and last progress (progress must increase),
/// and whether it was cancelled. A linear table: a firmware runs one or two requests at once.
///
/// ```
/// use rpcwire_mcp::Requests;
/// # use rpcwire::{Connection, Inbound, Input, Instant, storage::Inline, wire::RxBuffer};
/// # let mut conn: Connection<Inline<1024, 512, 2, 2>> = Connection::new(Default::default());
/// # let mut rx: RxBuffer<[u8; 512]> = conn.rx_buffer();
/// # let mut input: &[u8] = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x","_meta":{"progressToken":"p"}}}
/// # "#;
/// # let Input::Item(Inbound::Request(req)) = conn.handle_input(Instant::ZERO, &mut rx, &mut input) else { panic!() };
/// let mut requests: Requests<2> = Requests::new();
/// let token = rpcwire_mcp::progress_token(req.params);
/// assert!(requests.track(req.handle, req.id.raw_bytes(), token.map(|t| t.as_bytes())));
/// assert_eq!(requests.progress(req.handle, 1), Some(&b"\"p\""[..]));
/// assert_eq!(requests.progress(req.handle, 1), None); // must increase
/// assert_eq!(requests.cancel(b"7"), Some(req.handle));
/// assert!(requests.is_cancelled(req.handle));
/// requests.finish(req.handle);
/// assert_eq!(requests.cancel(b"7"), None);
/// ```
pub struct Requests<const N: usize> {
    slots: [Option<Entry>; N],
}

impl<const N: usize> Default for Requests<N> {
    fn default() -> Self {
        Requests::new()
    }
}

impl<const N: usize> Requests<N> {
    /// An empty table (const: it can live in a `static`).
    pub const fn new() -> Self {
        Requests { slots: [None; N] }
    }

    fn find(&self, handle: RequestHandle) -> Option<&Entry> {
        self.slots.iter().flatten().find(|e| e.handle == handle)
    }

    fn find_mut(&mut self, handle: RequestHandle) -> Option<&mut Entry> {
        self.slots.iter_mut().flatten().find(|e| e.handle == handle)
    }

    /// Starts tracking a request: its id's JSON text and its progress token's, if any. False
    /// when the table is full or the id is longer than [`MAX_KEY_LEN`] (the request then runs
    /// without progress or cancellation). A token too long is dropped (no progress).
    pub fn track(&mut self, handle: RequestHandle, id: &[u8], token: Option<&[u8]>) -> bool {
        self.finish(handle);
        let Some(id) = Key::new(id) else {
            return false;
        };
        let Some(free) = self.slots.iter_mut().find(|s| s.is_none()) else {
            return false;
        };
        *free = Some(Entry {
            handle,
            id,
            token: token.and_then(Key::new).unwrap_or(Key::EMPTY),
            last: None,
            cancelled: false,
        });
        true
    }

    /// Stops tracking a request (it was answered).
    pub fn finish(&mut self, handle: RequestHandle) {
        for slot in self.slots.iter_mut() {
            if slot.is_some_and(|e| e.handle == handle) {
                *slot = None;
            }
        }
    }

    /// Marks the request whose id is `request_id` (JSON text, as in `notifications/cancelled`)
    /// cancelled, and returns it; `None` when no running request has that id (it finished
    /// already, or never was: the notification is then ignored, as MCP says). Ids are
    /// compared as written, byte for byte: matching JSON values instead (`"w\u0031"` and
    /// `"w1"`, as the host side does with `Id::match_key`) would cost a firmware image about
    /// 1.4 KiB of flash (measured) for ids no client writes two ways.
    pub fn cancel(&mut self, request_id: &[u8]) -> Option<RequestHandle> {
        let entry = self
            .slots
            .iter_mut()
            .flatten()
            .find(|e| e.id.get() == request_id && !e.cancelled)?;
        entry.cancelled = true;
        Some(entry.handle)
    }

    /// True once the request was cancelled.
    pub fn is_cancelled(&self, handle: RequestHandle) -> bool {
        self.find(handle).is_some_and(|e| e.cancelled)
    }

    /// True when the request carried a progress token.
    pub fn has_progress(&self, handle: RequestHandle) -> bool {
        self.find(handle).is_some_and(|e| e.token.len > 0)
    }

    /// The request's progress token (JSON text) to send `notifications/progress` with for
    /// `progress`; `None` when the request carried no token, is not tracked, was cancelled,
    /// or `progress` is not above the last value recorded (MCP requires it to increase).
    pub fn check_progress(&self, handle: RequestHandle, progress: u32) -> Option<&[u8]> {
        let entry = self.find(handle)?;
        if entry.token.len == 0 || entry.cancelled || entry.last.is_some_and(|l| progress <= l) {
            return None;
        }
        Some(entry.token.get())
    }

    /// Records `progress` as sent for the request.
    pub fn record_progress(&mut self, handle: RequestHandle, progress: u32) {
        if let Some(entry) = self.find_mut(handle) {
            entry.last = Some(progress);
        }
    }

    /// [`check_progress`](Requests::check_progress) then
    /// [`record_progress`](Requests::record_progress): the token to send with, recorded.
    pub fn progress(&mut self, handle: RequestHandle, progress: u32) -> Option<&[u8]> {
        self.check_progress(handle, progress)?;
        self.record_progress(handle, progress);
        self.find(handle).map(|e| e.token.get())
    }

    /// Requests tracked now.
    pub fn len(&self) -> usize {
        self.slots.iter().flatten().count()
    }

    /// True when none is tracked.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

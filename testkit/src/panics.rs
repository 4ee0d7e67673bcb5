//! Panics caught while a harness runs a case: a router turns a handler's panic into an
//! Internal error answer, which is valid JSON-RPC, so the harness watches for panics itself.

use std::cell::RefCell;
use std::sync::Once;

thread_local! {
    /// `Some` while this thread runs a case: the messages of the panics seen.
    static SEEN: RefCell<Option<Vec<String>>> = const { RefCell::new(None) };
}

static HOOK: Once = Once::new();

/// Installs (once) a panic hook that records panics on threads running a case, quietly, and
/// passes every other panic to the hook that was there before.
fn install() {
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let message = info
                .payload()
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| info.payload().downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "(a panic with a non-string payload)".into());
            let location = info
                .location()
                .map(|l| format!(" at {}:{}", l.file(), l.line()));
            let recorded = SEEN.with(|seen| match seen.borrow_mut().as_mut() {
                Some(list) => {
                    list.push(format!("{message}{}", location.unwrap_or_default()));
                    true
                }
                None => false,
            });
            if !recorded {
                previous(info);
            }
        }));
    });
}

/// Runs `f` on this thread, returning its value and the first panic seen meanwhile.
pub(crate) fn watch<T>(f: impl FnOnce() -> T) -> (T, Option<String>) {
    install();
    SEEN.with(|seen| *seen.borrow_mut() = Some(Vec::new()));
    let value = f();
    let seen = SEEN
        .with(|seen| seen.borrow_mut().take())
        .unwrap_or_default();
    (value, seen.into_iter().next())
}

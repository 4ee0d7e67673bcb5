//! A `tracing` layer that records every span: its name, its fields (at creation and as
//! recorded later) and its parent, for tests that check span attributes.

#![allow(clippy::unwrap_used)] // a poisoned record is a failed test

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tracing::field::{Field, Visit};
use tracing::span::{self, Attributes, Id};
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

/// A span as recorded: its name, fields, and its parent's index.
#[derive(Debug, Clone, Default)]
pub struct Seen {
    /// The span's name.
    pub name: String,
    /// Its fields, as text (`Debug` for non-strings).
    pub fields: HashMap<String, String>,
    /// Its parent's index in the record.
    pub parent: Option<usize>,
}

/// The spans seen, and each live span's index by its id.
type Record = (Vec<Seen>, HashMap<u64, usize>);

/// The layer (clone it: the clones share the record).
#[derive(Clone, Default)]
pub struct Spans(Arc<Mutex<Record>>);

struct Fields<'a>(&'a mut HashMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

impl<S: tracing::Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Spans {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut seen = Seen {
            name: attrs.metadata().name().to_owned(),
            ..Seen::default()
        };
        attrs.record(&mut Fields(&mut seen.fields));
        let mut all = self.0.lock().unwrap();
        let parent = ctx
            .span(id)
            .and_then(|s| s.parent())
            .map(|p| p.id().into_u64());
        seen.parent = parent.and_then(|p| all.1.get(&p).copied());
        let index = all.0.len();
        all.0.push(seen);
        all.1.insert(id.into_u64(), index);
    }
    fn on_record(&self, id: &Id, values: &span::Record<'_>, _: Context<'_, S>) {
        let mut all = self.0.lock().unwrap();
        if let Some(&i) = all.1.get(&id.into_u64()) {
            values.record(&mut Fields(&mut all.0[i].fields));
        }
    }
}

impl Spans {
    /// The spans named `name`, in creation order.
    pub fn named(&self, name: &str) -> Vec<Seen> {
        let all = self.0.lock().unwrap();
        all.0.iter().filter(|s| s.name == name).cloned().collect()
    }
    /// The span at `i` (a [`Seen::parent`]).
    pub fn get(&self, i: usize) -> Seen {
        self.0.lock().unwrap().0[i].clone()
    }
}

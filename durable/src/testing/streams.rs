//! Event streams as a dispatcher opens them ([`crate::serving::OpenStream`]),
//! recorded: what each client was sent, and whether it ended.

use std::cell::{Cell, RefCell};

/// An event stream's client, as the native tests read it: what was written, and whether it ended.
#[derive(Default)]
pub struct StreamClient {
    pub written: RefCell<String>,
    pub closed: Cell<bool>,
}

struct StreamSink(std::rc::Rc<StreamClient>);

impl crate::ports::EventSink for StreamSink {
    fn send(&self, bytes: &[u8]) -> bool {
        self.0.written.borrow_mut().push_str(&String::from_utf8_lossy(bytes));
        true
    }
    fn close(&self) {
        self.0.closed.set(true);
    }
}

/// Opens recording sinks ([`crate::serving::OpenStream`]): the streams a dispatcher opened, in order.
#[derive(Default)]
pub struct TestStreams(pub RefCell<Vec<std::rc::Rc<StreamClient>>>);

impl crate::serving::OpenStream for TestStreams {
    fn open(&self) -> Result<Box<dyn crate::ports::EventSink>, String> {
        let client = std::rc::Rc::new(StreamClient::default());
        self.0.borrow_mut().push(client.clone());
        Ok(Box::new(StreamSink(client)))
    }
}

//! The wake-ups the ledger sends one kind's controller (a held object to reconcile again
//! when room appears). One controller of a kind reads them at a time; a process that stops
//! leading stops its controllers and starts new ones when it leads again, so the reader
//! hands the channel back to the ledger when it goes, with what was sent meanwhile still
//! queued, for the next controller of the kind.

use std::sync::Arc;
use std::task::{Context, Poll};

use parking_lot::Mutex;
use tokio::sync::mpsc::{self, UnboundedReceiver, UnboundedSender, error::TryRecvError};

/// Where the ledger keeps a kind's wake-ups while no controller reads them.
pub(super) struct WakeSlot<T> {
    sender: UnboundedSender<T>,
    idle: Arc<Mutex<Option<UnboundedReceiver<T>>>>,
}

impl<T> WakeSlot<T> {
    pub(super) fn new() -> Self {
        let (sender, receiver) = mpsc::unbounded_channel();
        Self {
            sender,
            idle: Arc::new(Mutex::new(Some(receiver))),
        }
    }

    /// Queues a wake-up, read by the kind's controller now or by its next one.
    pub(super) fn send(&self, wake: T) {
        // The receiver is either read or kept in `idle`: it lives as long as the slot.
        let _ = self.sender.send(wake);
    }

    /// The wake-ups, for one reader at a time; `None` while another holds them.
    pub(super) fn take(&self) -> Option<Wakes<T>> {
        let receiver = self.idle.lock().take()?;
        Some(Wakes {
            receiver: Some(receiver),
            home: self.idle.clone(),
        })
    }
}

/// A kind's wake-ups, held by its controller; given back to the ledger when dropped.
pub struct Wakes<T> {
    receiver: Option<UnboundedReceiver<T>>,
    home: Arc<Mutex<Option<UnboundedReceiver<T>>>>,
}

impl<T> Wakes<T> {
    /// The next wake-up, as [`UnboundedReceiver::poll_recv`]; never `Ready(None)` while the
    /// ledger lives.
    pub fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<T>> {
        match self.receiver.as_mut() {
            Some(receiver) => receiver.poll_recv(cx),
            None => Poll::Ready(None),
        }
    }

    /// The next wake-up if one is queued, as [`UnboundedReceiver::try_recv`].
    pub fn try_recv(&mut self) -> Result<T, TryRecvError> {
        match self.receiver.as_mut() {
            Some(receiver) => receiver.try_recv(),
            None => Err(TryRecvError::Disconnected),
        }
    }
}

impl<T> Drop for Wakes<T> {
    fn drop(&mut self) {
        *self.home.lock() = self.receiver.take();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_reader_at_a_time_and_the_next_gets_what_was_sent_meanwhile() {
        let slot = WakeSlot::new();
        let mut first = slot.take().expect("the first reader");
        assert!(slot.take().is_none(), "taken");
        slot.send("a");
        assert_eq!(first.try_recv(), Ok("a"));
        drop(first);

        // No reader (a follower's controllers are stopped): queued, not lost.
        slot.send("b");
        let mut next = slot.take().expect("handed back when the first reader went");
        assert_eq!(next.try_recv(), Ok("b"));
        assert_eq!(next.try_recv(), Err(TryRecvError::Empty));
    }
}

/// An object to reconcile again: a held member that room was found for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Woken {
    pub namespace: String,
    pub name: String,
}

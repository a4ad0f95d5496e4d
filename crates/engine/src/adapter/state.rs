//! What a kind keeps of one object between its passes: its [`Actuator::State`]. The engine
//! holds it in the object's record beside its own, so that an object that goes takes all
//! of it in one removal, and the kind keeps no table of its own.
//!
//! [`Actuator::State`]: super::Actuator::State

/// A kind's state of one object. `()` for a kind that keeps nothing.
pub trait KindState: Default + Send + 'static {
    /// Whether it holds nothing: an object whose record holds nothing has no record.
    fn is_empty(&self) -> bool;
}

impl KindState for () {
    fn is_empty(&self) -> bool {
        true
    }
}

/// Where the states of a kind's objects are kept, by object key (the engine's records).
pub trait StateCells<T>: Send + Sync {
    /// Runs `f` on the state of `key`: a state left empty is not kept.
    fn with_state(&self, key: &str, f: &mut dyn FnMut(&mut T));
}

/// A pass's hold on the state of its object. The passes of one object run one after
/// another, so what a pass reads here is what its previous pass left.
pub struct StateOf<'a, T> {
    cells: &'a dyn StateCells<T>,
    key: &'a str,
}

impl<'a, T> StateOf<'a, T> {
    pub fn new(cells: &'a dyn StateCells<T>, key: &'a str) -> Self {
        Self { cells, key }
    }

    /// Reads the object's state.
    pub fn read<R>(&self, f: impl FnOnce(&T) -> R) -> R {
        self.update(|state| f(state))
    }

    /// Changes the object's state.
    pub fn update<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        let mut f = Some(f);
        let mut out = None;
        self.cells.with_state(self.key, &mut |state| {
            if let Some(f) = f.take() {
                out = Some(f(state));
            }
        });
        out.expect("StateCells::with_state runs its function once")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use parking_lot::Mutex;
    use std::collections::HashMap;

    #[derive(Default)]
    struct Cells(Mutex<HashMap<String, Vec<u8>>>);

    impl StateCells<Vec<u8>> for Cells {
        fn with_state(&self, key: &str, f: &mut dyn FnMut(&mut Vec<u8>)) {
            let mut all = self.0.lock();
            let mut state = all.remove(key).unwrap_or_default();
            f(&mut state);
            if !state.is_empty() {
                all.insert(key.into(), state);
            }
        }
    }

    #[test]
    fn a_pass_reads_what_it_changed_and_only_its_own_object() {
        let cells = Cells::default();
        let a = StateOf::new(&cells, "ns/a");
        let b = StateOf::new(&cells, "ns/b");
        a.update(|s| s.push(7));
        assert_eq!(a.read(|s| s.clone()), vec![7]);
        assert!(b.read(|s| s.is_empty()));
        assert_eq!(cells.0.lock().len(), 1, "an empty state is not kept");
    }
}

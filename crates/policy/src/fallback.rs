//! The placement fallback: try the candidates in order until the platform makes the
//! object, and keep what each refusal said. One loop for every kind that places (a Pod on
//! a GPU type or CPU flavor, a Cluster on a GPU type and data center); the kind makes the
//! platform call for each candidate [`Fallback::next`] gives, and tells the answer.
//!
//! A candidate dearer than the price already admitted (by a Budget) is admitted again
//! before it is tried: a fallback to a dearer placement must fit the Budget too. A
//! capacity refusal moves on to the next candidate; any other failure ends the fallback.

use gpucloud_engine::failure::Failure;
use gpucloud_platform::{ErrorClass, PlatformError};

/// Prices closer than this are one price (they are sums of floating-point figures).
const SAME_PRICE: f64 = 1e-9;

/// The course of one fallback over `candidates`, in order.
pub struct Fallback<'c, C> {
    candidates: &'c [C],
    price_of: fn(&C) -> f64,
    next: usize,
    admitted: f64,
    no_room: Vec<(usize, PlatformError)>,
}

impl<'c, C> Fallback<'c, C> {
    /// A fallback whose first candidate's price is the one admitted before it starts.
    pub fn new(candidates: &'c [C], price_of: fn(&C) -> f64) -> Self {
        Self {
            admitted: candidates.first().map_or(0.0, price_of),
            candidates,
            price_of,
            next: 0,
            no_room: Vec::new(),
        }
    }

    /// The next candidate to try, with its index, once `admit` has admitted its price when
    /// it is dearer than any admitted before; `None` when none is left. A refused admission
    /// ends the fallback with its failure.
    pub fn next(
        &mut self,
        admit: impl FnOnce(f64) -> Result<(), Failure>,
    ) -> Result<Option<(usize, &'c C)>, Failure> {
        let Some(candidate) = self.candidates.get(self.next) else {
            return Ok(None);
        };
        let price = (self.price_of)(candidate);
        if price > self.admitted + SAME_PRICE {
            admit(price)?;
            self.admitted = price;
        }
        self.next += 1;
        Ok(Some((self.next - 1, candidate)))
    }

    /// The platform refused candidate `index`: a capacity refusal is kept and the fallback
    /// goes on; any other ends it, with a failure that says what was being done (`doing`).
    pub fn refused(
        &mut self,
        index: usize,
        error: PlatformError,
        doing: &str,
    ) -> Result<(), Failure> {
        if error.class() != ErrorClass::Capacity {
            return Err(Failure::from_platform(doing, &error));
        }
        self.no_room.push((index, error));
        Ok(())
    }

    /// The capacity refusals so far, by candidate index, in the order they came.
    pub fn no_room(&self) -> &[(usize, PlatformError)] {
        &self.no_room
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_room() -> PlatformError {
        PlatformError::Capacity {
            operation: "POST /v2/pods",
            detail: "no instances available".into(),
        }
    }

    fn price(p: &f64) -> f64 {
        *p
    }

    #[test]
    fn candidates_come_in_order_and_dearer_ones_are_admitted_again() {
        let prices = [1.0, 1.0, 2.0, 3.0];
        let mut fallback = Fallback::new(&prices, price);
        let mut admitted = Vec::new();
        let mut tried = Vec::new();
        while let Some((i, _)) = fallback
            .next(|p| {
                admitted.push(p);
                Ok(())
            })
            .expect("admitted")
        {
            tried.push(i);
            fallback.refused(i, no_room(), "deploy").expect("goes on");
        }
        assert_eq!(tried, vec![0, 1, 2, 3]);
        // The first price was admitted before the fallback; an equal one is not again.
        assert_eq!(admitted, vec![2.0, 3.0]);
        let refused: Vec<usize> = fallback.no_room().iter().map(|(i, _)| *i).collect();
        assert_eq!(refused, vec![0, 1, 2, 3]);
    }

    #[test]
    fn a_dearer_candidate_the_budget_refuses_is_not_given() {
        let prices = [1.0, 5.0];
        let mut fallback = Fallback::new(&prices, price);
        let first = fallback.next(|_| unreachable!("the first is admitted already"));
        assert_eq!(first.expect("given").map(|(i, _)| i), Some(0));
        let held = fallback
            .next(|_| Err(Failure::waiting("BudgetExceeded", "over")))
            .map(|next| next.map(|(i, _)| i));
        assert_eq!(
            held.map_err(|f| f.reason),
            Err("BudgetExceeded".to_string())
        );
    }

    #[test]
    fn a_refusal_other_than_capacity_ends_the_fallback_and_says_what_was_done() {
        let prices = [1.0];
        let mut fallback = Fallback::new(&prices, price);
        let (i, _) = fallback.next(|_| Ok(())).expect("ok").expect("one");
        let failure = fallback
            .refused(
                i,
                PlatformError::invalid_input("imageName", "bad image"),
                "deploy the pod on A100",
            )
            .expect_err("ends");
        assert!(
            failure.message.contains("deploy the pod on A100"),
            "{failure:?}"
        );
        assert!(fallback.no_room().is_empty());
    }
}

"""Static checks that a spec's episode can do what it says, beside `arenac.validate`'s:
`timing` (a recurrence lands inside the soak; an onset is one the layer can honour) and `voids`
(a fault the load cannot make manifest). Both report at the author's line."""

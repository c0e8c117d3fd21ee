package notify

// SetAfterLook makes f run in every scan between the look at the scanned
// table's open writers and the read of its rows (tests).
func SetAfterLook(n *Notifier, f func(table string)) { n.afterLook = f }

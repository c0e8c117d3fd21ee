package topupread

// LiteralsForTest is literals, for the external tests.
var LiteralsForTest = literals

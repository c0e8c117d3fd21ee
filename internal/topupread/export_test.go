package topupread

// LiteralsForTest is literals, for the external tests.
var LiteralsForTest = literals

// PrefixRangeForTest is prefixRange, for the external tests.
var PrefixRangeForTest = prefixRange

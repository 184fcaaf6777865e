package engine

// For tests in package engine_test.
var (
	ProcSelfFD     = &procSelfFD
	TestHookReopen = &testHookReopen
)

// Populate is populate, for TestMmapPopulate.
var Populate = populate

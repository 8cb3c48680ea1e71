package claims

// FillConfig is testConfig, for the package's external tests.
var FillConfig = testConfig

package fleet_test

const workerEnv = "FLEET_TEST_WORKER"

func workerMain() int { return 0 }

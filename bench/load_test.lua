-- wrk script for bench/load_test.sh: POST /v1/predict with a fixed JSON body
-- (set by the environment variable GPUCAST_BODY).
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = os.getenv("GPUCAST_BODY")

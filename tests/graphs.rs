//! The pieces of kiln's answer to launch-bound steps, on a machine without
//! a GPU: `cuda::graph` on a CPU engine is a clear error that runs nothing;
//! the optimizers' device-side step count gives the same updates as host
//! step numbers; `linear` with a fused ReLU equals ReLU of `linear`, with
//! its gradients. (Replays against eager runs and the fused cuBLASLt forms
//! are `kiln-check --group graphs` and `--group matmul` on a GPU.)

use kiln::{Device, Interpreter};

fn cpu() -> Interpreter {
    Interpreter::builder().device(Device::Cpu).build().unwrap()
}

#[test]
fn a_graph_on_a_cpu_engine_is_a_clear_error_before_the_block_runs() {
    let mut k = cpu();
    let err = k
        .run("let ran = [0]; cuda::graph(|| { ran[0] = 1; 2 })", "graph")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("cuda::graph: this engine runs on the cpu, and a graph records GPU work"),
        "{err}"
    );
    let err = k
        .run("cuda::graph(|| 1, #{warm: true})", "graph")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("unknown option 'warm' (expected inputs, warmup)"),
        "{err}"
    );
    assert!(!k.eval::<bool>("cuda::is_capturing()").unwrap());
    // the engine is fine afterwards
    assert_eq!(k.eval::<f64>("(ones([3]) * 2.0).sum().item()").unwrap(), 6.0);
}

#[test]
fn step_counts_as_tensors_give_the_updates_of_step_numbers() {
    let mut k = cpu();
    let v: rhai::Array = k
        .eval(
            r#"
            let run = |counted| {
                seed(4);
                let p = [randn([7]), randn([3, 2])];
                let m = [optimizer_state(p[0]), optimizer_state(p[1])];
                let v = [optimizer_state(p[0]), optimizer_state(p[1])];
                let b = [optimizer_state(p[0]), optimizer_state(p[1])];
                let q = [p[0].clone(), p[1].clone()];
                let count = zeros([1], #{dtype: "i64"});
                for step in 1..4 {
                    let g = [randn([7]), randn([3, 2])];
                    count += 1;
                    let opts = #{lr: 0.1, weight_decay: 0.01, decoupled: true};
                    adam_step_multi_(p, g, m, v, if counted { count } else { step }, opts);
                    let s = #{lr: 0.05, momentum: 0.9};
                    if counted { s.step = count; } else { s.init_buffer = step == 1; }
                    sgd_step_multi_(q, g, b, s);
                }
                cat([p[0], p[1].reshape([-1]), q[0], q[1].reshape([-1])], 0).to_list()
            };
            [run.call(false), run.call(true)]
            "#,
        )
        .unwrap();
    assert_eq!(format!("{:?}", v[0]), format!("{:?}", v[1]));
    // the stdlib counts on the parameters' device and reports its steps
    let steps: i64 = k
        .eval(
            r#"
            import "nn" as nn;
            import "optim" as optim;
            let model = nn::linear(3, 2);
            let opt = optim::adamw(nn::parameters(model));
            for i in 0..4 {
                optim::zero_grad(opt);
                nn::apply(model, ones([5, 3])).sum().backward();
                optim::step(opt);
            }
            optim::steps(opt)
            "#,
        )
        .unwrap();
    assert_eq!(steps, 4);
    let err = k
        .run(
            "adam_step_multi_([ones([2])], [ones([2])], [zeros([2])], [zeros([2])], ones([2], #{dtype: \"i64\"}), #{})",
            "count",
        )
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("the step count must be a one-element integer tensor, got [2] i64"),
        "{err}"
    );
}

#[test]
fn linear_with_a_relu_activation_is_relu_of_linear_with_its_gradients() {
    let mut k = cpu();
    let v: rhai::Array = k
        .eval(
            r#"
            seed(8);
            let x = randn([6, 5]).requires_grad(true);
            let w = randn([4, 5]).requires_grad(true);
            let b = randn([4]).requires_grad(true);
            let up = randn([6, 4]);
            let fused = linear(x, w, b, #{activation: "relu"});
            (fused * up).sum().backward();
            let got = [fused.detach(), x.grad, w.grad, b.grad];
            x.zero_grad(); w.zero_grad(); b.zero_grad();
            let plain = linear(x, w, #{bias: b}).relu();
            (plain * up).sum().backward();
            let want = [plain.detach(), x.grad, w.grad, b.grad];
            // the stdlib's sequential takes linear + ReLU pairs as one call
            import "nn" as nn;
            seed(2);
            let m = nn::mlp([5, 7, 3], "relu");
            let h = linear(x.detach(), m.layers[0].weight, #{bias: m.layers[0].bias}).relu();
            let direct = linear(h, m.layers[2].weight, #{bias: m.layers[2].bias});
            [got.map(|t| t.to_list()), want.map(|t| t.to_list()), nn::apply(m, x.detach()).to_list(), direct.to_list()]
            "#,
        )
        .unwrap();
    assert_eq!(format!("{:?}", v[0]), format!("{:?}", v[1]));
    assert_eq!(format!("{:?}", v[2]), format!("{:?}", v[3]));
    let err = k
        .run(
            "linear(ones([2, 3]), ones([4, 3]), ones([4]), #{activation: \"gelu\"})",
            "act",
        )
        .unwrap_err()
        .to_string();
    assert!(err.contains("linear: unknown activation 'gelu'"), "{err}");
}

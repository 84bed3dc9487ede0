//! The pieces of kiln's answer to launch-bound steps, on a machine without
//! a GPU: `cuda::graph` on a CPU engine is a clear error that runs nothing;
//! the optimizers' device-side step count gives the same updates as host
//! step numbers, and skip parameters without gradients; `linear` with a
//! fused ReLU or tanh GELU equals the activation of `linear`, with its
//! gradients. (Replays against eager runs and the fused cuBLASLt forms
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
            "linear(ones([2, 3]), ones([4, 3]), ones([4]), #{activation: \"tanh\"})",
            "act",
        )
        .unwrap_err()
        .to_string();
    assert!(err.contains("linear: unknown activation 'tanh'"), "{err}");
    let err = k
        .run(
            "linear(ones([2, 3]), ones([4, 3]), ones([4]), #{activation: \"relu\", approximate: \"tanh\"})",
            "act",
        )
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("approximate applies to activation \"gelu\" only"),
        "{err}"
    );
}

#[test]
fn linear_with_a_gelu_activation_is_gelu_of_linear_with_its_gradients() {
    let mut k = cpu();
    let v: rhai::Array = k
        .eval(
            r#"
            seed(9);
            let x = randn([6, 5]).requires_grad(true);
            let w = randn([8, 5]).requires_grad(true);
            let b = randn([8]).requires_grad(true);
            let up = randn([6, 8]);
            let fused = linear(x, w, b, #{activation: "gelu", approximate: "tanh"});
            (fused * up).sum().backward();
            let got = [fused.detach(), x.grad, w.grad, b.grad];
            x.zero_grad(); w.zero_grad(); b.zero_grad();
            let plain = gelu(linear(x, w, #{bias: b}), #{approximate: "tanh"});
            (plain * up).sum().backward();
            let want = [plain.detach(), x.grad, w.grad, b.grad];
            let exact = [linear(x, w, b, #{activation: "gelu"}), gelu(linear(x, w, b))];
            // the stdlib's sequential takes linear + tanh GELU pairs as one call
            import "nn" as nn;
            seed(3);
            let m = nn::sequential([nn::linear(5, 7), nn::GELU("tanh"), nn::linear(7, 3)]);
            let h = gelu(linear(x.detach(), m.layers[0].weight, m.layers[0].bias), #{approximate: "tanh"});
            let direct = linear(h, m.layers[2].weight, m.layers[2].bias);
            [got.map(|t| t.to_list()), want.map(|t| t.to_list()), exact.map(|t| t.to_list()),
             nn::apply(m, x.detach()).to_list(), direct.to_list()]
            "#,
        )
        .unwrap();
    assert_eq!(format!("{:?}", v[0]), format!("{:?}", v[1]));
    let exact = v[2].clone().into_array().unwrap();
    assert_eq!(format!("{:?}", exact[0]), format!("{:?}", exact[1]));
    assert_eq!(format!("{:?}", v[3]), format!("{:?}", v[4]));
    let err = k
        .run("import \"nn\" as nn; nn::GELU(\"fast\")", "gelu")
        .unwrap_err()
        .to_string();
    assert!(err.contains("approximate must be \"none\" or \"tanh\""), "{err}");
}

#[test]
fn multi_tensor_steps_skip_parameters_without_gradients() {
    let mut k = cpu();
    let v: rhai::Array = k
        .eval(
            r#"
            let run = |own| {
                seed(5);
                let p = [randn([4]), randn([2, 3]), randn([3])];
                let m = p.map(|t| optimizer_state(t));
                let v = p.map(|t| optimizer_state(t));
                let b = p.map(|t| optimizer_state(t));
                let q = p.map(|t| t.clone());
                let g = [randn([4]), (), randn([3])];
                if own {
                    // () grads: each parameter's own .grad (the second has none)
                    for i in [0, 2] { p[i].grad = g[i]; q[i].grad = g[i]; }
                    adam_step_multi_(p, (), m, v, 1, #{lr: 0.1});
                    sgd_step_multi_(q, (), b, #{lr: 0.1, momentum: 0.9, init_buffer: true});
                } else {
                    adam_step_multi_(p, g, m, v, 1, #{lr: 0.1});
                    sgd_step_multi_(q, g, b, #{lr: 0.1, momentum: 0.9, init_buffer: true});
                }
                [p.map(|t| t.to_list()), q.map(|t| t.to_list()), m[1].abs().sum().item() + b[1].abs().sum().item()]
            };
            seed(5);
            let before = randn([4]);
            let untouched = randn([2, 3]).to_list();
            [run.call(false), run.call(true), untouched]
            "#,
        )
        .unwrap();
    assert_eq!(format!("{:?}", v[0]), format!("{:?}", v[1]));
    let r = v[0].clone().into_array().unwrap();
    let adam = r[0].clone().into_array().unwrap();
    // the parameter without a gradient and its state are untouched
    assert_eq!(format!("{:?}", adam[1]), format!("{:?}", v[2]));
    assert_eq!(r[2].as_float().unwrap(), 0.0);
    // a step with no gradient anywhere (before the first backward, frozen
    // parameters) updates nothing and is no error, on the CPU too
    let moved: bool = k
        .eval(
            r#"
            import "nn" as nn;
            import "optim" as optim;
            let m = nn::linear(3, 2);
            let a = optim::adamw(nn::parameters(m));
            let s = optim::sgd(nn::parameters(m), #{lr: 0.1, momentum: 0.9});
            let w0 = m.weight.clone();
            optim::step(a);
            optim::step(s);
            adam_step_multi_([], [], [], [], 1, #{});
            sgd_step_multi_([], [], [], #{});
            if optim::steps(a) != 1 || optim::steps(s) != 1 { throw "steps not counted"; }
            if (m.weight - w0).abs().sum().item() != 0.0 { throw "a parameter without a gradient moved"; }
            nn::apply(m, ones([4, 3])).sum().backward();
            optim::step(s);
            optim::step(a);
            (m.weight - w0).abs().sum().item() > 0.0
            "#,
        )
        .unwrap();
    assert!(moved);
    let err = k
        .run(
            "adam_step_multi_([ones([2])], [ones([2]), ones([2])], [zeros([2])], [zeros([2])], 1, #{})",
            "n",
        )
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("adam_step_multi_: 1 parameters but 2 gradients"),
        "{err}"
    );
    let err = k
        .run("sgd_step_multi_([ones([2])], 3, [()], #{})", "g")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("grads must be an array of tensors or (), got i64"),
        "{err}"
    );
}

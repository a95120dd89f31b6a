fn main() {
    print!("{}", overseer::crd::all_yaml().unwrap());
}
